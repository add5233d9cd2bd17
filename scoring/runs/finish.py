"""After a run: the gate against a baseline and the reports CI systems read.

``run_eval`` calls ``open_baseline`` before the run (a wrong ``--baseline`` fails in a second,
not after an hour of calls) and ``finish_report`` after it, then exits with the code this module
returns. The flags are declared with the other run options (``scoring.runs.options.schema``).
The statistics and the writers live in the scoring core; this step only gathers what they need
(the baseline's metrics, dataset ids, database diffs) and writes the files.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scoring.core.db_diff import diff_summary, gold_diff
from scoring.core.files import write_text_atomic
from scoring.core.gate import (
    GateVerdict,
    NothingInCommon,
    attempt_key,
    attempt_verdict,
    evaluate,
    recorded_dir,
    scenario_and_trial,
)
from scoring.core.gate_report import RunFigures, gate_lines, summary_markdown
from scoring.core.junit import JUnitContext, junit_xml
from scoring.runs.attempt import load_final_db
from scoring.runs.baseline import StoredRun, load_run
from scoring.runs.executors.base import RunError
from scoring.runs.options import RunOptions
from scoring.runs.runner import RunReport

# Documented exit codes of run_eval (README, "Exit codes").
EXIT_FINISHED = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_REGRESSION = 3
EXIT_INTERRUPTED = 130
GITHUB_STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


def open_baseline(options: RunOptions) -> StoredRun | None:
    """The ``--baseline`` run, read before the run starts; RunError naming the flag if wrong."""
    if not options.baseline:
        return None
    try:
        return load_run(options.baseline, output_dir=options.output_dir)
    except RunError as exc:
        raise RunError(f"--baseline {exc}") from None


@dataclass
class Finished:
    """What the command prints and the code it exits with."""

    exit_code: int
    lines: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    """Whole stderr lines (``run_eval: error: …`` or ``run_eval: warning: …``)."""
    verdict: GateVerdict | None = None


def finish_report(report: RunReport, options: RunOptions, *, baseline: StoredRun | None,
                  environ: Mapping[str, str] | None = None) -> Finished:
    """Gate ``report`` against ``baseline`` and write the JUnit and Markdown reports that
    ``options`` asks for."""
    environ = os.environ if environ is None else environ
    label, min_turns = report.session_dir.name, options.min_agent_turns
    figures = RunFigures.from_metrics(label, report.metrics, min_agent_turns=min_turns)
    done = Finished(EXIT_FINISHED)
    base_figures = None
    if baseline is not None:
        base_figures = RunFigures.from_metrics(baseline.label, baseline.metrics, min_agent_turns=baseline.min_agent_turns)
        try:
            done.verdict = evaluate(base_figures.verdicts, figures.verdicts, alpha=options.regression_alpha)
        except NothingInCommon as exc:
            if options.fail_on_regression:
                done.exit_code = EXIT_ERROR  # a gate that compared nothing must not pass
            level = "error" if done.exit_code else "warning"
            done.notices.append(f"run_eval: {level}: --baseline {baseline.label}: {exc}; nothing to gate on")
        else:
            done.lines += gate_lines(done.verdict, baseline.label)
            if done.verdict.regression and options.fail_on_regression:
                done.exit_code = EXIT_REGRESSION
    if options.junit_xml:
        context = JUnitContext(f"evasite {label}", min_agent_turns=min_turns, trials=options.trials,
                               eva_ids=_eva_ids(report.metrics), db_diffs=_db_diffs(report.metrics, min_turns))
        done.lines.append(f"JUnit report: {_write(options.junit_xml, junit_xml(report.metrics, context))}")
    markdown_path, append = ((options.summary_md, False) if options.summary_md
                             else (environ.get(GITHUB_STEP_SUMMARY), True))
    if markdown_path:
        text = summary_markdown(figures, baseline=base_figures if done.verdict else None, verdict=done.verdict)
        done.lines.append(f"Markdown summary: {_write(markdown_path, text, append=append)}")
    return done


def _write(path: str, text: str, *, append: bool = False) -> Path:
    """Write a report; GitHub's step summary file is appended to, as other steps share it."""
    target = Path(path).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    if append:
        with target.open("a", encoding="utf-8") as handle:
            handle.write(text + "\n")
    else:
        write_text_atomic(target, text)
    return target


def _eva_ids(metrics: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    from scenarios.registry import get_eval_scenario_class

    ids = {}
    for name in {scenario_and_trial(m)[0] for m in metrics}:
        cls = get_eval_scenario_class(name)
        eva_id = getattr(cls, "eva_id", "") if cls is not None else ""
        if eva_id:
            ids[name] = eva_id
    return ids


def _db_diffs(metrics: Sequence[Mapping[str, Any]], min_agent_turns: int) -> dict[tuple[str, int], str]:
    """One-line gold-vs-final database diffs of the failed attempts whose database is wrong."""
    from scenarios.data_root import DataRootError
    from scenarios.registry import get_eval_scenario

    diffs = {}
    for entry in metrics:
        if entry.get("db_state_match") is not False or attempt_verdict(entry, min_agent_turns=min_agent_turns) is not False:
            continue
        name, _ = scenario_and_trial(entry)
        scenario_dir = recorded_dir(entry)
        actual = load_final_db(scenario_dir) if scenario_dir is not None else None
        if actual is None:
            continue
        try:
            scenario = get_eval_scenario(name)
            expected = scenario.expected_scenario_db if scenario is not None else None
        except (KeyError, DataRootError):
            expected = None
        if isinstance(expected, dict):
            diffs[attempt_key(entry)] = diff_summary(gold_diff(expected, actual))
    return diffs
