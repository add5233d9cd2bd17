"""The gate's verdict as plain, JSON-safe data: what a site run stores about its baseline when it
finishes, and what the compare page renders for any two runs, so both show the same figures.

Every number comes from ``scoring.core.gate`` (and the text from ``gate_report``); this module
only lays them out. A stored record is a snapshot: re-scoring or deleting the baseline later
does not rewrite what the gate said when the run ended, as a CI log would not.
"""
from __future__ import annotations

from typing import Any

from scoring.core.gate import GateVerdict, ScenarioDelta
from scoring.core.gate_report import gate_lines


def _flip(s: ScenarioDelta) -> dict[str, Any]:
    return {"name": s.name, "direction": "fewer" if s.delta < 0 else "more", "base_passes": s.base_passes,
            "passes": s.passes, "trials": s.trials, "p_drop": s.p_drop, "p_drop_holm": s.p_drop_holm,
            "broken": s.broken}


def verdict_record(verdict: GateVerdict, *, baseline_label: str) -> dict[str, Any]:
    """The verdict, each rule with its test and p-value, the reasons, the flips (fewer passes
    first, then more) with their Fisher p before and after Holm, and the terminal report."""
    c = verdict.comparison
    difference = c.difference
    return {
        "baseline_label": baseline_label,
        "regression": verdict.regression,
        "alpha": verdict.alpha,
        "scenarios": len(c.scenarios),
        "attempts": c.attempts,
        "base_passes": c.base_passes,
        "passes": c.passes,
        "base_rate": c.base_passes / c.attempts,
        "rate": c.passes / c.attempts,
        "difference": {"delta": difference.delta, "low": difference.low, "high": difference.high},
        "only_in_baseline": len(c.only_in_baseline),
        "only_in_run": len(c.only_in_run),
        "rules": [
            {"name": "The pass rate dropped",
             "test": "paired sign-flip test over the per-scenario changes, one-sided"
                     + ("" if c.paired.exact else " (Monte Carlo, seeded)"),
             "p": c.paired.p_value, "fired": verdict.paired_significant},
            {"name": "One scenario dropped",
             "test": "Fisher's exact test per scenario, one-sided, Holm-adjusted (the smallest)",
             "p": min(s.p_drop_holm for s in c.scenarios), "fired": bool(verdict.significant)},
            {"name": "A scenario broke",
             "test": f"passed every baseline trial, fails every trial now: {len(verdict.broken)} scenario(s)",
             "p": None, "fired": bool(verdict.broken)},
        ],
        "reasons": verdict.reasons(),
        "flips": [_flip(s) for s in c.drops + c.gains],
        "lines": gate_lines(verdict, baseline_label),
    }


def unavailable_record(reason: str, *, baseline_label: str) -> dict[str, Any]:
    """A gate that could not judge (nothing in common, the baseline gone): says why, no verdict."""
    return {"baseline_label": baseline_label, "unavailable": reason}
