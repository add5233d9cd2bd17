"""The degradation table of a ``--conditions`` run: per condition its pass rate with a 95%
interval, key-entity accuracy per direction, handoff and yield p50/p95. One computation for
``all_summary.txt``, the run page and the compare page. Pure."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scoring.core import aggregate as agg
from scoring.core.aggregate import RunAggregator
from scoring.core.latency import latency_stats
from scoring.core.stats import wilson_interval


@dataclass(frozen=True)
class ConditionFigures:
    name: str
    passes: int
    counted: int
    """Attempts with a verdict (N/A left out), stalled ones counted as failures."""
    interval: tuple[float, float] | None
    entities: dict[str, tuple[int, int]]
    """Direction → (intact, spoken) key entities."""
    handoff_p50_ms: float | None
    handoff_p95_ms: float | None
    yield_p50_ms: float | None
    yield_p95_ms: float | None
    yields: int

    @property
    def rate(self) -> float | None:
        return self.passes / self.counted if self.counted else None

    @property
    def percent(self) -> tuple[float, float, float] | None:
        """Rate and interval in percent, for pages (None without verdicts)."""
        if self.rate is None or self.interval is None:
            return None
        return self.rate * 100, self.interval[0] * 100, self.interval[1] * 100


def _percentiles(stats: Mapping[str, Any]) -> tuple[float | None, float | None]:
    if not stats.get("count"):
        return None, None
    return float(stats["p50_ms"]), float(stats["p95_ms"])


def condition_table(run: RunAggregator) -> list[ConditionFigures]:
    """One row per condition in the order the run met them; [] for a run without conditions."""
    rows = []
    for name, group in run.by_condition().items():
        success = group.buckets[agg.SUCCESS]
        accuracy = group.key_entity_accuracy() or {}
        handoff = _percentiles(group.overall_latency_stats())
        yields = latency_stats(group.yield_times())
        rows.append(ConditionFigures(
            name=name, passes=success.passes, counted=success.total,
            interval=wilson_interval(success.passes, success.total) if success.total else None,
            entities={direction: (counts["intact"], counts["spoken"]) for direction, counts in accuracy.items()},
            handoff_p50_ms=handoff[0], handoff_p95_ms=handoff[1],
            yield_p50_ms=_percentiles(yields)[0], yield_p95_ms=_percentiles(yields)[1], yields=yields["count"]))
    return rows


def condition_table_of(metrics: Iterable[Mapping[str, Any]], *, min_agent_turns: int) -> list[ConditionFigures]:
    """``condition_table`` over a run's metrics dicts (stored rows, or ``all_metrics.json``)."""
    run = RunAggregator(min_agent_turns)
    for entry in metrics:
        run.add(entry)
    return condition_table(run)
