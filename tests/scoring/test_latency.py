"""§8 / §15.2 latency statistics."""
from __future__ import annotations

from scoring.core.latency import latency_stats, latency_values, overall_latency_stats


def test_formulas() -> None:
    stats = latency_stats([3100.2, 1800.0, 2345.6])
    assert stats["count"] == 3
    assert abs(stats["mean_ms"] - 2415.2666) < 1e-3
    assert (stats["p50_ms"], stats["p95_ms"], stats["min_ms"], stats["max_ms"]) == (2345.6, 3100.2, 1800.0, 3100.2)


def test_p95_index_is_floor() -> None:
    values = list(range(1, 21))  # n=20: p95 = sorted[19], p50 = sorted[10]
    stats = latency_stats(values)
    assert stats["p95_ms"] == 20 and stats["p50_ms"] == 11
    assert latency_stats(list(range(1, 20)))["p95_ms"] == 19  # n=19: floor(18.05) = 18


def test_empty_per_scenario_is_zero() -> None:
    assert latency_stats([]) == {"count": 0, "mean_ms": 0.0, "p50_ms": 0.0, "p95_ms": 0.0, "min_ms": 0.0, "max_ms": 0.0}


def test_empty_overall_is_minus_one_with_zero_count() -> None:
    assert overall_latency_stats([]) == {"count": 0, "mean_ms": -1.0, "p50_ms": -1.0, "p95_ms": -1.0, "min_ms": -1.0, "max_ms": -1.0}
    assert overall_latency_stats([5.0])["mean_ms"] == 5.0


def test_latency_values_skips_bad_entries() -> None:
    assert latency_values([{"latency_ms": 1}, {"latency_ms": "x"}, {"latency_ms": True}, "junk", {}]) == [1.0]
    assert latency_values(None) == []
