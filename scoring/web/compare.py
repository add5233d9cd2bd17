"""Two runs side by side: per scenario (verdict, stop reason, turns, latency p50, flips first),
and the differences that matter with their uncertainty: pass rate over the scenarios both runs
ran (and each run's own overall rate), latency, tokens and key-entity accuracy, each as B − A
with a 95% interval from ``scoring.core.stats`` (Newcombe for rates, a seeded bootstrap over
scenarios for the rest), and only the run flags that differ.

Pure: each run is given as ``{(scenario_name, trial): ResultSummary}``.
"""
from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from scoring.core.stats import RateDifference, bootstrap_difference, rate_difference

BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True)
class ResultSummary:
    pk: int
    is_successful: bool | None
    stop_reason: str
    total_turns: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None = None
    tokens: float | None = None
    entity_accuracy: float | None = None


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

    @property
    def shared(self) -> bool:
        return self.a is not None and self.b is not None


def compare_rows(a: Mapping[tuple[str, int], ResultSummary], b: Mapping[tuple[str, int], ResultSummary],
                 order: list[tuple[str, int]]) -> list[CompareRow]:
    """Rows for every scenario in either run: regressions, then fixes, then the rest in ``order``."""
    keys = list(dict.fromkeys([*order, *a.keys(), *b.keys()]))
    rows = [CompareRow(name, trial, a.get((name, trial)), b.get((name, trial))) for name, trial in keys]
    rank = {"pass→fail": 0, "fail→pass": 1, "": 2}
    return sorted(rows, key=lambda row: rank[row.flip])  # stable: keeps ``order`` within a rank


@dataclass(frozen=True)
class Rate:
    passed: int
    counted: int  # results with a pass/fail verdict (N/A left out)

    @property
    def value(self) -> float | None:
        return self.passed / self.counted if self.counted else None


def pass_rate(results: Sequence[ResultSummary]) -> Rate:
    verdicts = [r.is_successful for r in results if r.is_successful is not None]
    return Rate(sum(1 for v in verdicts if v), len(verdicts))


@dataclass(frozen=True)
class Delta:
    """One figure of A and B and their difference B − A; ``interval`` None when either side has
    nothing to measure."""

    label: str
    unit: str  # "%", "ms", "tokens" or ""
    a: float | None
    b: float | None
    n_a: int
    n_b: int
    interval: RateDifference | None
    lower_is_better: bool = False
    note: str = ""

    @property
    def verdict(self) -> str:
        """"better", "worse" or "" (the interval includes no change)."""
        if self.interval is None or not self.interval.excludes_zero():
            return ""
        improved = self.interval.delta < 0 if self.lower_is_better else self.interval.delta > 0
        return "better" if improved else "worse"


def _rate_delta(label: str, a: Rate, b: Rate, note: str = "") -> Delta:
    interval = (rate_difference(a.passed, a.counted, b.passed, b.counted) if a.counted and b.counted else None)
    return Delta(label, "%", a.value, b.value, a.counted, b.counted, interval, note=note)


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def _mean(values: Sequence[float]) -> float:
    return float(statistics.fmean(values))


@lru_cache(maxsize=256)
def _bootstrap(a: tuple[float, ...], b: tuple[float, ...],
               statistic: Callable[[Sequence[float]], float]) -> RateDifference:
    """The seeded bootstrap of ``statistic(b) − statistic(a)``, once per process for the same samples.

    It is most of a compare page's time (3 × 2,000 resamples in Python) and the same inputs always
    give the same interval, while readers reload that page for every scenario they open side by
    side and every flips-only toggle; the result is immutable, so sharing it is safe."""
    return bootstrap_difference(a, b, statistic, resamples=BOOTSTRAP_RESAMPLES, seed=0)


def _figure_delta(label: str, unit: str, a: list[float], b: list[float], statistic: Callable[[Sequence[float]], float],
                  *, lower_is_better: bool, note: str) -> Delta:
    if not a or not b:
        return Delta(label, unit, statistic(a) if a else None, statistic(b) if b else None, len(a), len(b), None,
                     lower_is_better, note)
    interval = _bootstrap(tuple(a), tuple(b), statistic)
    return Delta(label, unit, statistic(a), statistic(b), len(a), len(b), interval, lower_is_better, note)


@dataclass
class Comparison:
    rows: list[CompareRow]
    deltas: list[Delta] = field(default_factory=list)
    shared: int = 0
    only_a: int = 0
    only_b: int = 0

    @property
    def flips(self) -> int:
        return sum(1 for row in self.rows if row.flip)


def compare_runs(a: Mapping[tuple[str, int], ResultSummary], b: Mapping[tuple[str, int], ResultSummary]) -> Comparison:
    """Rows plus the headline differences. Rates are given over the shared scenarios (the fair
    comparison) and over each run's own results; the other figures use the shared scenarios,
    one value per scenario result (the unit the bootstrap resamples)."""
    rows = compare_rows(a, b, [*a.keys(), *b.keys()])
    shared = [row for row in rows if row.shared]
    shared_a = [row.a for row in shared if row.a is not None]
    shared_b = [row.b for row in shared if row.b is not None]

    def values(results: list[ResultSummary], name: str) -> list[float]:
        return [float(getattr(r, name)) for r in results if getattr(r, name) is not None]

    per_scenario = "median over shared scenarios"
    deltas = [
        _rate_delta("Pass rate, shared scenarios", pass_rate(shared_a), pass_rate(shared_b),
                    note=f"{len(shared)} scenario runs in both"),
        _rate_delta("Pass rate, overall", pass_rate(list(a.values())), pass_rate(list(b.values())),
                    note="each run's own results"),
        _figure_delta("Latency p50", "ms", values(shared_a, "latency_p50_ms"), values(shared_b, "latency_p50_ms"),
                      _median, lower_is_better=True, note=f"per-scenario p50, {per_scenario}"),
        _figure_delta("Latency p95", "ms", values(shared_a, "latency_p95_ms"), values(shared_b, "latency_p95_ms"),
                      _median, lower_is_better=True, note=f"per-scenario p95, {per_scenario}"),
        _figure_delta("Agent tokens per scenario", "tokens", values(shared_a, "tokens"), values(shared_b, "tokens"),
                      _mean, lower_is_better=True, note="prompt + completion, mean over shared scenarios"),
        _figure_delta("Key-entity accuracy", "%", values(shared_a, "entity_accuracy"),
                      values(shared_b, "entity_accuracy"), _mean, lower_is_better=False,
                      note="user → agent, mean over shared scenarios"),
    ]
    return Comparison(rows, deltas, shared=len(shared), only_a=sum(1 for r in rows if r.b is None),
                      only_b=sum(1 for r in rows if r.a is None))


def differing_flags(a: Sequence[tuple[str, str]], b: Sequence[tuple[str, str]]) -> list[tuple[str, str | None, str | None]]:
    """``(flag, A's value, B's value)`` for the flags whose values differ (None: not recorded)."""
    left, right = dict(a), dict(b)
    names = list(dict.fromkeys([*left, *right]))
    return [(name, left.get(name), right.get(name)) for name in names if left.get(name) != right.get(name)]
