"""What the gate and the noise floor say, as text for the terminal and Markdown for a pull request.

The figures come from ``scoring.core.stats`` and ``scoring.core.gate``; nothing is computed here
that a page could not get from the same functions.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scoring.core.gate import GateVerdict, ScenarioDelta, Verdicts, trial_lists, verdicts_from_metrics
from scoring.core.latency import latency_values, overall_latency_stats
from scoring.core.stats import (
    RateDifference,
    bootstrap_difference,
    flaky_scenarios,
    noise_floor,
    wilson_interval,
)


@dataclass(frozen=True)
class RunFigures:
    """One run as the reports show it: its verdicts and its pooled latencies."""

    label: str
    verdicts: Verdicts
    latencies: list[float] = field(default_factory=list)

    @classmethod
    def from_metrics(cls, label: str, metrics: Iterable[Mapping[str, Any]], *, min_agent_turns: int) -> RunFigures:
        metrics = list(metrics)
        latencies = [value for entry in metrics for value in latency_values(entry.get("latencies"))]
        return cls(label, verdicts_from_metrics(metrics, min_agent_turns=min_agent_turns), latencies)

    @property
    def passes(self) -> int:
        return sum(sum(trials.values()) for trials in self.verdicts.values())

    @property
    def attempts(self) -> int:
        return sum(len(trials) for trials in self.verdicts.values())

    @property
    def max_trials(self) -> int:
        return max((len(trials) for trials in self.verdicts.values()), default=0)

    def flaky(self) -> dict[str, tuple[int, int]]:
        return flaky_scenarios(trial_lists(self.verdicts))


def _pct(rate: float) -> str:
    return f"{rate * 100:.2f}%"


def _points(value: float) -> str:
    return f"{value * 100:+.2f}"


def pass_rate_text(figures: RunFigures) -> str:
    """``80.00% (40/50), 95% CI [66.95%, 88.76%]`` (Wilson), or ``N/A`` with no scored attempt."""
    if not figures.attempts:
        return "N/A (no scored attempt)"
    low, high = wilson_interval(figures.passes, figures.attempts)
    return f"{_pct(figures.passes / figures.attempts)} ({figures.passes}/{figures.attempts}), 95% CI [{_pct(low)}, {_pct(high)}]"


def difference_text(difference: RateDifference) -> str:
    return (f"{_points(difference.delta)} points, 95% CI [{_points(difference.low)}, "
            f"{_points(difference.high)}]")


def _counts(s: ScenarioDelta) -> str:
    return f"{s.base_passes}/{s.trials} → {s.passes}/{s.trials}"


def _flips(deltas: list[ScenarioDelta], limit: int = 10) -> str:
    shown = ", ".join(f"{s.name} {_counts(s)}" for s in deltas[:limit])
    return shown + (f", … ({len(deltas) - limit} more)" if len(deltas) > limit else "")


def gate_lines(verdict: GateVerdict, baseline_label: str) -> list[str]:
    """The terminal report printed after the run."""
    c = verdict.comparison
    trials = sorted({s.trials for s in c.scenarios})
    trial_text = f"{trials[0]}" if len(trials) == 1 else f"{trials[0]}–{trials[-1]}"
    lines = [f"Baseline {baseline_label}: {len(c.scenarios)} scenario(s) in common, {trial_text} trial(s) each"]
    if c.only_in_baseline or c.only_in_run:
        lines.append(f"  Not compared: {len(c.only_in_baseline)} scenario(s) only in the baseline, "
                     f"{len(c.only_in_run)} only in this run")
    lines += [
        f"  Pass rate: {_pct(c.base_passes / c.attempts)} ({c.base_passes}/{c.attempts}) → "
        f"{_pct(c.passes / c.attempts)} ({c.passes}/{c.attempts}), {difference_text(c.difference)}",
        f"  Paired sign-flip test over per-scenario deltas (one-sided, drop): p = {c.paired.p_value:.4f}"
        f" ({'exact' if c.paired.exact else 'Monte Carlo, seeded'})",
    ]
    if c.drops:
        lines.append(f"  Fewer passes ({len(c.drops)}): {_flips(c.drops)}")
    if c.gains:
        lines.append(f"  More passes ({len(c.gains)}): {_flips(c.gains)}")
    if verdict.regression:
        lines.append(f"Gate: REGRESSION at α = {verdict.alpha:g}")
        lines += [f"  - {reason}" for reason in verdict.reasons()]
    else:
        lines.append(f"Gate: no regression at α = {verdict.alpha:g}")
    return lines


# --- noise floor --------------------------------------------------------------------------------


def noise_floor_text(figures: RunFigures) -> str:
    """What ``manage.py noise_floor`` prints: per-trial pass rates, their spread, the flaky
    scenarios and the band within which two runs differ by noise alone."""
    outcomes = trial_lists(figures.verdicts)
    floor = noise_floor(outcomes)  # ValueError without repeated trials
    k = figures.max_trials
    per_trial = []
    for trial in sorted({t for trials in figures.verdicts.values() for t in trials}):
        verdicts = [trials[trial] for trials in figures.verdicts.values() if trial in trials]
        per_trial.append((trial, sum(verdicts), len(verdicts)))
    rates = [passes / total for _, passes, total in per_trial]
    flaky = figures.flaky()
    lines = [
        f"Noise floor of {figures.label}: {len(outcomes)} scenario(s), up to {k} trial(s) each "
        f"({floor.scenarios} with at least 2)",
        "Pass rate per trial: " + ", ".join(f"trial {t} {_pct(p / n)} ({p}/{n})" for t, p, n in per_trial),
        f"Spread across trials: {(max(rates) - min(rates)) * 100:.2f} points ({_pct(min(rates))} to {_pct(max(rates))})",
        f"Flaky scenarios (verdict varies over trials): {len(flaky)} of {len(outcomes)}",
        *[f"  {name}: {passes}/{total} passed" for name, (passes, total) in flaky.items()],
        f"Run-to-run SD of the pass rate: {floor.sd(1) * 100:.2f} points at 1 trial per scenario, "
        f"{floor.sd(k) * 100:.2f} points at {k}",
        f"Two runs differing by less than ±{floor.difference_floor(1) * 100:.2f} points (1 trial each) or "
        f"±{floor.difference_floor(k) * 100:.2f} points ({k} trials each) are within noise (95%)",
    ]
    return "\n".join(lines) + "\n"


# --- Markdown -----------------------------------------------------------------------------------


def _latency_cell(values: list[float]) -> str:
    if not values:
        return "—"
    stats = overall_latency_stats(values)
    return f"{stats['p50_ms']:.0f} / {stats['p95_ms']:.0f} ms"


def _p95(values: list[float]) -> float:
    return float(overall_latency_stats(values)["p95_ms"])


def summary_markdown(run: RunFigures, *, baseline: RunFigures | None = None,
                     verdict: GateVerdict | None = None, seed: int = 0) -> str:
    """A step summary for a pull request: pass rate with interval, the baseline and the gate,
    flips, flaky scenarios and latency."""
    header = ["", "This run"] + ([f"Baseline `{baseline.label}`"] if baseline else [])
    rows = [
        ["Pass rate", pass_rate_text(run)] + ([pass_rate_text(baseline)] if baseline else []),
        ["Latency p50 / p95", _latency_cell(run.latencies)] + ([_latency_cell(baseline.latencies)] if baseline else []),
    ]
    lines = [f"### evasite: `{run.label}`", "", _table(header, rows), ""]
    if verdict is not None:
        c = verdict.comparison
        lines.append(f"Difference on the {len(c.scenarios)} shared scenario(s): **{difference_text(c.difference)}**; "
                     f"paired sign-flip test p = {c.paired.p_value:.4f}.")
        if baseline and run.latencies and baseline.latencies:
            p95 = bootstrap_difference(baseline.latencies, run.latencies, _p95, seed=seed)
            lines.append(f"Latency p95 difference: {p95.delta:+.0f} ms, 95% bootstrap CI "
                         f"[{p95.low:+.0f}, {p95.high:+.0f}] ms.")
        lines.append("")
        if verdict.regression:
            lines.append(f"**Gate: regression** at α = {verdict.alpha:g}")
            lines += [f"- {reason}" for reason in verdict.reasons()]
        else:
            lines.append(f"**Gate: no regression** at α = {verdict.alpha:g}")
        lines.append("")
        flips = c.drops + c.gains
        if flips:
            lines += [f"#### Flips ({len(flips)})", "", _table(
                ["Scenario", "Baseline", "This run", "Fisher p (drop)", "after Holm"],
                [[f"`{s.name}`", f"{s.base_passes}/{s.trials}", f"{s.passes}/{s.trials}",
                  f"{s.p_drop:.4f}", f"{s.p_drop_holm:.4f}"] for s in flips]), ""]
    flaky = run.flaky()
    if run.max_trials >= 2:
        lines.append(f"#### Flaky scenarios ({len(flaky)} of {len(run.verdicts)})")
        lines.append("")
        if flaky:
            lines += [_table(["Scenario", "Passes"],
                             [[f"`{name}`", f"{passes}/{total}"] for name, (passes, total) in flaky.items()]), ""]
        else:
            lines += ["None: every scenario gave the same verdict on every trial.", ""]
    return "\n".join(lines)


def _table(header: list[str], rows: list[list[str]]) -> str:
    def row(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    return "\n".join([row(header), row(["---"] * len(header))] + [row(r) for r in rows])
