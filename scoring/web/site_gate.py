"""The release gate for runs started from the site, the way ``run_eval --baseline`` gates a run:
the baseline is opened before the run (a wrong one refuses the start instead of failing after an
hour of calls), and when the run finishes ``finish_report``'s verdict is stored with the run and
its watchers are told to fetch the page again.

A site user only ever names a baseline by run id, chosen from the form's list: never a path or a
timestamp. Nothing here writes a file: the JUnit and Markdown options are the command line's.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async

from scoring.core.gate_record import unavailable_record, verdict_record
from scoring.runs.baseline import RunNotFound, StoredRun, load_run_id
from scoring.runs.finish import finish_report
from scoring.runs.live import ChannelsProgress
from scoring.runs.options import RunOptions
from scoring.runs.runner import RunError, RunReport
from scoring.web import services
from scoring.web.gate import NOTHING_IN_COMMON, baseline_candidates


@dataclass(frozen=True)
class SiteBaseline:
    """The baseline a site run asked for: read, or why it could not be."""

    reference: str
    run_id: int | None
    stored: StoredRun | None
    problem: str = ""


def _open(reference: str) -> SiteBaseline:
    if not reference.isdigit():
        return SiteBaseline(reference, None, None, "The baseline must be a run of this site, chosen by its id.")
    run_id = int(reference)
    if not baseline_candidates().filter(pk=run_id).exists():
        return SiteBaseline(reference, run_id, None,
                            f"Run {run_id} cannot be the baseline: it does not exist, has not finished or has no results.")
    try:
        return SiteBaseline(reference, run_id, load_run_id(run_id))
    except RunNotFound:
        return SiteBaseline(reference, run_id, None, f"Run {run_id} holds no scored scenario to compare with.")


def open_site_baseline(options: RunOptions) -> SiteBaseline | None:
    """The run's baseline, read before it starts; None without one. A new run with a baseline
    that cannot be read is refused (RunError); a resumed run goes on and records why it is not
    gated, so a baseline deleted since never blocks finishing a run."""
    if not options.baseline:
        return None
    opened = _open(str(options.baseline).strip())
    if opened.stored is None and not options.resume:
        raise RunError(opened.problem)
    return opened


def record_site_gate(report: RunReport, options: RunOptions, baseline: SiteBaseline) -> dict[str, Any]:
    """Gate the finished run as ``run_eval`` does and store the verdict; returns the record."""
    if baseline.stored is None:
        record = unavailable_record(baseline.problem, baseline_label=baseline.reference)
    else:
        # The command's own step, minus the report files and the exit code (nobody to exit to).
        quiet = dataclasses.replace(options, junit_xml=None, summary_md=None, fail_on_regression=False)
        done = finish_report(report, quiet, baseline=baseline.stored, environ={})
        label = baseline.stored.label
        record = (verdict_record(done.verdict, baseline_label=label) if done.verdict is not None
                  else unavailable_record(NOTHING_IN_COMMON, baseline_label=label))
    if report.run_id is not None:
        services.run_gate_record(run_id=report.run_id, baseline_id=baseline.run_id, record=record)
    return record


async def gate_finished_run(report: RunReport, options: RunOptions, baseline: SiteBaseline | None) -> None:
    """After a site run finished: store its verdict and tell its watchers (the run page's panels
    were fetched when the run finished, before the verdict existed)."""
    if baseline is None or report.run_id is None:
        return
    record = await sync_to_async(record_site_gate)(report, options, baseline)
    progress = ChannelsProgress(report.run_id)
    progress.run_gated(regression=record.get("regression"))
    await progress.flush()
