"""The release gate: did this run get worse than a baseline, beyond run-to-run noise?

Pure statistics over verdicts (scenario → trial → passed), so the command, a CI job and later the
compare page reach the same answer from the same numbers. Only the scenarios and trial numbers
both runs hold are compared: a baseline on all 50 scenarios can gate a 5-seed run.

A regression is any of:

* the paired sign-flip test over per-scenario deltas finds the drop significant at α (on one
  trial per scenario this is McNemar's exact test), so 50/50 → 40/50 fails the gate while
  3/5 → 2/5 does not;
* a scenario whose own drop is significant by Fisher's exact test over its trials, after Holm's
  correction over the shared scenarios (one scenario going 10/10 → 2/10 among 50 otherwise
  unchanged ones);
* a scenario that passed every baseline trial and fails every trial now: a break, however few
  trials there were (with one trial per scenario, any pass → fail).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from scoring.core.attempt_names import comparable_name, recorded_condition, split_attempt_name
from scoring.core.signals import agent_turn_count, is_stalled
from scoring.core.stats import (
    RateDifference,
    SignFlipResult,
    fisher_exact_drop,
    holm_adjust,
    rate_difference,
    sign_flip_test,
)
from scoring.core.values import is_int

DEFAULT_ALPHA = 0.05
DEFAULT_MIN_AGENT_TURNS = 3
"""``--min-agent-turns`` when a run's recorded flags do not say."""
Verdicts = dict[str, dict[int, bool]]
"""Scenario name (with its condition, ``attempt_key``) → trial number → passed, in queue order."""

class NothingInCommon(ValueError):
    """The two runs share no scored scenario trial, so there is nothing to gate on."""


def recorded_dir(metrics: Mapping[str, Any]) -> Path | None:
    """The attempt's scenario directory as its metrics record it (the agent context is there)."""
    directory = metrics.get("scenario_directory")
    return Path(directory) if isinstance(directory, str) else None


def attempt_verdict(metrics: Mapping[str, Any], *, min_agent_turns: int) -> bool | None:
    """One attempt's verdict as ``all_summary.txt`` counts it: a stalled attempt is a failure,
    ``is_successful`` otherwise, None for "N/A" (no applicable signal, left out of rates)."""
    if is_stalled(agent_turn_count(metrics, recorded_dir(metrics)), min_agent_turns):
        return False
    success = metrics.get("is_successful")
    return success if isinstance(success, bool) else None


def scenario_and_trial(metrics: Mapping[str, Any]) -> tuple[str, int]:
    """``(scenario name, trial)``; one-trial runs write no ``trial`` and are trial 1."""
    name, suffix_trial = split_attempt_name(str(metrics.get("scenario_name", "")))
    trial = metrics.get("trial")
    if is_int(trial):
        return name, int(trial)
    return name, suffix_trial or 1


def attempt_key(metrics: Mapping[str, Any]) -> tuple[str, int]:
    """What the gate pairs attempts by: the scenario with its condition (a clean attempt pairs
    with a plain run's), and the trial."""
    name, trial = scenario_and_trial(metrics)
    return comparable_name(name, recorded_condition(metrics)), trial


def recorded_min_agent_turns(parsed_args: Mapping[str, Any]) -> int:
    """The stall floor a run's verdicts were scored with (its recorded ``--min-agent-turns``)."""
    value = parsed_args.get("min_agent_turns")
    return value if is_int(value) else DEFAULT_MIN_AGENT_TURNS


def verdicts_from_metrics(metrics: Iterable[Mapping[str, Any]], *, min_agent_turns: int) -> Verdicts:
    """Every scored attempt of a run, grouped by scenario."""
    verdicts: Verdicts = {}
    for entry in metrics:
        verdict = attempt_verdict(entry, min_agent_turns=min_agent_turns)
        if verdict is None:
            continue
        name, trial = attempt_key(entry)
        verdicts.setdefault(name, {})[trial] = verdict
    return verdicts


def trial_lists(verdicts: Verdicts) -> dict[str, list[bool]]:
    """Each scenario's verdicts in trial order (the shape of the flakiness and noise figures)."""
    return {name: [trials[t] for t in sorted(trials)] for name, trials in verdicts.items()}


@dataclass(frozen=True)
class ScenarioDelta:
    """One shared scenario over the trial numbers both runs hold."""

    name: str
    base_passes: int
    trials: int
    passes: int
    p_drop: float
    """Fisher's exact test, one-sided for a drop."""
    p_drop_holm: float
    """``p_drop`` after Holm's correction over every shared scenario."""

    @property
    def delta(self) -> Fraction:
        """Pass rate now − pass rate before."""
        return Fraction(self.passes - self.base_passes, self.trials)

    @property
    def broken(self) -> bool:
        """Passed every baseline trial, fails every trial now."""
        return self.base_passes == self.trials and self.passes == 0


@dataclass(frozen=True)
class Comparison:
    """A run against its baseline on what both hold."""

    scenarios: tuple[ScenarioDelta, ...]
    only_in_baseline: tuple[str, ...]
    only_in_run: tuple[str, ...]
    paired: SignFlipResult
    """Sign-flip test over the per-scenario deltas, one-sided for a drop."""

    @property
    def base_passes(self) -> int:
        return sum(s.base_passes for s in self.scenarios)

    @property
    def passes(self) -> int:
        return sum(s.passes for s in self.scenarios)

    @property
    def attempts(self) -> int:
        """Compared attempts on each side (the same on both: shared trials only)."""
        return sum(s.trials for s in self.scenarios)

    @property
    def difference(self) -> RateDifference:
        """Pass rate now − before with Newcombe's 95% interval over the pooled attempts; it
        treats the two sides as independent, so on paired runs it errs on the wide side."""
        return rate_difference(self.base_passes, self.attempts, self.passes, self.attempts)

    @property
    def drops(self) -> list[ScenarioDelta]:
        """Scenarios that pass less often now, largest drop first."""
        return sorted((s for s in self.scenarios if s.delta < 0), key=lambda s: s.delta)

    @property
    def gains(self) -> list[ScenarioDelta]:
        """Scenarios that pass more often now, largest gain first."""
        return sorted((s for s in self.scenarios if s.delta > 0), key=lambda s: -s.delta)


def compare(baseline: Verdicts, run: Verdicts, *, seed: int = 0) -> Comparison:
    """Pair the runs on shared scenarios and trial numbers; raises NothingInCommon."""
    shared: list[tuple[str, int, int, int]] = []
    for name, trials in run.items():
        before = baseline.get(name, {})
        common = [t for t in sorted(trials) if t in before]
        if common:
            shared.append((name, len(common), sum(before[t] for t in common), sum(trials[t] for t in common)))
    if not shared:
        raise NothingInCommon("the run and the baseline share no scored scenario trial")
    p_drops = [fisher_exact_drop(base, n, now, n) for _, n, base, now in shared]
    adjusted = holm_adjust(p_drops)
    scenarios = tuple(
        ScenarioDelta(name, base, n, now, p, p_holm)
        for (name, n, base, now), p, p_holm in zip(shared, p_drops, adjusted)
    )
    names = {s.name for s in scenarios}
    return Comparison(
        scenarios=scenarios,
        only_in_baseline=tuple(name for name in baseline if name not in names),
        only_in_run=tuple(name for name in run if name not in names),
        paired=sign_flip_test([s.delta for s in scenarios], seed=seed),
    )


@dataclass(frozen=True)
class GateVerdict:
    """The gate's answer with the evidence behind it."""

    comparison: Comparison
    alpha: float
    paired_significant: bool
    significant: tuple[ScenarioDelta, ...]
    """Scenarios whose Holm-adjusted Fisher p is below α."""
    broken: tuple[ScenarioDelta, ...]

    @property
    def regression(self) -> bool:
        return self.paired_significant or bool(self.significant) or bool(self.broken)

    def reasons(self) -> list[str]:
        """One sentence per rule that fired (empty when the run passes the gate)."""
        c, reasons = self.comparison, []
        if self.paired_significant:
            reasons.append(
                f"the pass rate fell from {c.base_passes}/{c.attempts} to {c.passes}/{c.attempts} "
                f"over {len(c.scenarios)} shared scenario(s): paired sign-flip test "
                f"p = {c.paired.p_value:.4f} < α = {self.alpha:g}"
            )
        for s in self.significant:
            reasons.append(
                f"{s.name} fell from {s.base_passes}/{s.trials} to {s.passes}/{s.trials}: Fisher's exact "
                f"p = {s.p_drop:.4f}, {s.p_drop_holm:.4f} after Holm over {len(c.scenarios)} scenario(s), "
                f"< α = {self.alpha:g}"
            )
        if self.broken:
            names = ", ".join(s.name for s in self.broken)
            reasons.append(f"{len(self.broken)} scenario(s) passed every baseline trial and fail every trial now: {names}")
        return reasons


def judge(comparison: Comparison, *, alpha: float = DEFAULT_ALPHA) -> GateVerdict:
    """Apply the three rules of the module docstring at significance level ``alpha``."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    return GateVerdict(
        comparison=comparison,
        alpha=alpha,
        paired_significant=comparison.paired.observed < 0 and comparison.paired.p_value < alpha,
        significant=tuple(s for s in comparison.drops if s.p_drop_holm < alpha),
        broken=tuple(s for s in comparison.drops if s.broken),
    )


def evaluate(baseline: Verdicts, run: Verdicts, *, alpha: float = DEFAULT_ALPHA, seed: int = 0) -> GateVerdict:
    """Compare ``run`` with ``baseline`` and give the gate's verdict; raises NothingInCommon."""
    return judge(compare(baseline, run, seed=seed), alpha=alpha)
