"""Response-latency statistics (§8, §15.2).

Per-scenario and run-level statistics share one formula; they differ only in what an empty list
prints (0 per scenario, -1 run-wide with ``count`` still 0, §22 #16).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

STAT_FIELDS = ("mean_ms", "p50_ms", "p95_ms", "min_ms", "max_ms")


def _stats(values: Iterable[float], empty: float) -> dict[str, Any]:
    ordered = sorted(float(v) for v in values)
    n = len(ordered)
    if n == 0:
        return {"count": 0, **{field: empty for field in STAT_FIELDS}}
    return {
        "count": n,
        "mean_ms": sum(ordered) / n,
        "p50_ms": ordered[n // 2],
        "p95_ms": ordered[math.floor(n * 0.95)],
        "min_ms": ordered[0],
        "max_ms": ordered[-1],
    }


def latency_stats(values: Iterable[float]) -> dict[str, Any]:
    """One scenario's ``latency_stats``; every field 0 when nothing was measured."""
    return _stats(values, 0.0)


def overall_latency_stats(values: Iterable[float]) -> dict[str, Any]:
    """Run-wide pooled statistics; ``count`` 0 and every other field -1 when nothing was measured."""
    return _stats(values, -1.0)


def latency_values(latencies: Any) -> list[float]:
    """The numeric ``latency_ms`` values of a metrics ``latencies`` list (ill-typed entries skipped)."""
    if not isinstance(latencies, list):
        return []
    values = []
    for entry in latencies:
        value = entry.get("latency_ms") if isinstance(entry, Mapping) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values.append(float(value))
    return values
