"""Reads behind the release gate on the site: which runs may be a baseline and which one is the
site's, a run's flaky scenarios, the verdict a site run stored, and the gate between the two runs
of the compare page.

The statistics are the scoring core's (``scoring.core.gate`` through ``RunFigures`` and
``gate_record``), fed with the runs' stored metrics rows, so the compare page, a run's stored
verdict and ``run_eval --baseline`` agree on the same numbers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from scoring.core.gate import NothingInCommon, evaluate, recorded_min_agent_turns
from scoring.core.gate_record import unavailable_record, verdict_record
from scoring.core.gate_report import RunFigures
from scoring.models import BaselineMark, Run

BASELINE_CHOICES = 50
"""How many recent finished runs the New-run form offers as a baseline."""
NOTHING_IN_COMMON = "The two runs share no scored scenario trial, so there is nothing to gate on."


def baseline_candidates() -> QuerySet[Run]:
    """Runs that may be a baseline: finished benchmark runs with results (a human call is one
    person's attempt at one scenario, and a run still going has no final verdicts)."""
    return (Run.objects.filter(status=Run.Status.FINISHED, completed_scenarios__gt=0)
            .exclude(source=Run.Source.HUMAN))


def baseline_current() -> BaselineMark | None:
    """The site's baseline: the latest "Use as baseline" whose run may still be one."""
    return (BaselineMark.objects.select_related("run", "marked_by")
            .filter(run__in=baseline_candidates()).first())


def _choice_label(run: Run, current_id: int | None) -> str:
    mark = " (the site's baseline)" if run.pk == current_id else ""  # first, so a narrow list still shows it
    return (f"{run.title}{mark} · {run.agent_model or '?'} · {run.modality or '?'} · "
            f"{run.successful_scenarios}/{run.completed_scenarios} passed")


def baseline_choices() -> list[tuple[str, str]]:
    """The New-run form's baseline choice: none, then the newest candidates (the values are run
    ids), with the site's baseline always among them."""
    current = baseline_current()
    runs = list(baseline_candidates().order_by("-started_at", "-pk")[:BASELINE_CHOICES])
    if current is not None and current.run not in runs:
        runs.insert(0, current.run)
    current_id = current.run_id if current is not None else None
    return [("", "None: do not gate this run")] + [(str(run.pk), _choice_label(run, current_id)) for run in runs]


def baseline_initial() -> str:
    """The form's default baseline: the site's, when there is one."""
    current = baseline_current()
    return str(current.run_id) if current is not None else ""


@dataclass(frozen=True)
class BaselineStatus:
    """Whether a run is the site's baseline, and whether this reader may make it so."""

    is_current: bool
    may_mark: bool
    current: BaselineMark | None


def run_baseline_status(run: Run, *, may_control: bool) -> BaselineStatus:
    """The run page's baseline line and button (owner or staff, on a run that may be one)."""
    current = baseline_current()
    is_current = current is not None and current.run_id == run.pk
    may_mark = (may_control and not is_current
                and baseline_candidates().filter(pk=run.pk).exists())
    return BaselineStatus(is_current, may_mark, current)


def run_figures(run: Run) -> RunFigures:
    """The run's verdicts (scenario → trial → passed) from its stored metrics rows, scored with
    the stall floor the run was recorded with."""
    metrics = [entry for entry in run.results.order_by("position", "trial", "pk").values_list("metrics", flat=True)
               if isinstance(entry, dict)]
    return RunFigures.from_metrics(str(run), metrics, min_agent_turns=recorded_min_agent_turns(run.parsed_args or {}))


@dataclass(frozen=True)
class FlakyScenarios:
    """Scenarios whose verdict varies over the run's trials, as ``(name, passes, trials)``."""

    scenarios: int
    """Scenarios with a scored trial."""
    flaky: list[tuple[str, int, int]]


def run_flaky(run: Run, figures: RunFigures | None = None) -> FlakyScenarios | None:
    """The run's flaky scenarios with their pass counts; None with fewer than two trials."""
    if run.trials < 2:
        return None
    figures = figures if figures is not None else run_figures(run)
    return FlakyScenarios(len(figures.verdicts),
                          [(name, passes, trials) for name, (passes, trials) in figures.flaky().items()])


@dataclass(frozen=True)
class CompareGate:
    """The gate with A as the baseline and B as the run, and each side's flaky scenarios."""

    record: dict[str, Any]
    """``scoring.core.gate_record``: a verdict, or why there is none."""
    flaky_a: FlakyScenarios | None
    flaky_b: FlakyScenarios | None

    @property
    def flaky_names(self) -> dict[str, set[str]]:
        """Flaky scenario names per side, to flag their rows."""
        return {side: {name for name, _, _ in flaky.flaky} if flaky else set()
                for side, flaky in (("a", self.flaky_a), ("b", self.flaky_b))}


def compare_gate(a: Run, b: Run) -> CompareGate:
    """``run_eval --baseline A`` on B's results, at the default significance level."""
    figures_a, figures_b = run_figures(a), run_figures(b)
    try:
        record = verdict_record(evaluate(figures_a.verdicts, figures_b.verdicts), baseline_label=str(a))
    except NothingInCommon:
        record = unavailable_record(NOTHING_IN_COMMON, baseline_label=str(a))
    return CompareGate(record, run_flaky(a, figures_a), run_flaky(b, figures_b))


@dataclass(frozen=True)
class RunGate:
    """What a run page says about its gate."""

    record: dict[str, Any] | None
    """The verdict stored when the run finished (None while it runs again or has not finished)."""
    baseline: Run | None
    """The baseline, when it still exists (for its link and the compare link)."""
    pending: bool
    """A baseline was chosen and the run is still going: the verdict comes when it finishes."""


def _requested_baseline(run: Run) -> Run | None:
    reference = (run.parsed_args or {}).get("baseline")
    if isinstance(reference, str) and reference.isdigit():
        return Run.objects.filter(pk=int(reference)).first()
    return None


def run_gate(run: Run, *, status: str) -> RunGate | None:
    """The verdict a site run stored against its baseline; None for a run without one
    (command-line runs print their verdict instead of storing it)."""
    running = status == Run.Status.RUNNING
    requested = _requested_baseline(run) if run.source == Run.Source.WEB else None
    baseline = run.baseline or requested
    if running:
        return RunGate(None, baseline, True) if run.gate or requested is not None else None
    if run.gate:
        return RunGate(run.gate, baseline, False)
    if requested is None:
        return None
    why = ("The run did not finish, so it was not gated." if status != Run.Status.FINISHED
           else "The gate's verdict was not recorded: the server stopped before computing it.")
    return RunGate(unavailable_record(why, baseline_label=str(requested)), baseline, False)
