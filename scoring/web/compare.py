"""Two runs side by side per scenario (verdict, stop reason, turns, latency p50), flips first.

Pure: each run is given as ``{(scenario_name, trial): ResultSummary}``.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ResultSummary:
    pk: int
    is_successful: bool | None
    stop_reason: str
    total_turns: int
    latency_p50_ms: float | None


@dataclass
class CompareRow:
    scenario_name: str
    trial: int
    a: ResultSummary | None
    b: ResultSummary | None

    @property
    def flip(self) -> str:
        """``"pass→fail"``, ``"fail→pass"`` or ``""``."""
        if self.a is None or self.b is None:
            return ""
        if self.a.is_successful is True and self.b.is_successful is False:
            return "pass→fail"
        if self.a.is_successful is False and self.b.is_successful is True:
            return "fail→pass"
        return ""


def compare_rows(a: Mapping[tuple[str, int], ResultSummary], b: Mapping[tuple[str, int], ResultSummary],
                 order: list[tuple[str, int]]) -> list[CompareRow]:
    """Rows for every scenario in either run: regressions, then fixes, then the rest in ``order``."""
    keys = list(dict.fromkeys([*order, *a.keys(), *b.keys()]))
    rows = [CompareRow(name, trial, a.get((name, trial)), b.get((name, trial))) for name, trial in keys]
    rank = {"pass→fail": 0, "fail→pass": 1, "": 2}
    return sorted(rows, key=lambda row: rank[row.flip])  # stable: keeps ``order`` within a rank
