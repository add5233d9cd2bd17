"""Figures for the run page, drawn server-side as SVG geometry (no chart library, works offline):
pass/fail per scenario group (1.x ... 7.x) and the latency histogram with p50/p95 marked.

Pure: inputs are plain values, outputs are dataclasses the templates turn into SVG elements. The
groups themselves are the scenario catalogue's (``scenarios.registry.scenario_group``).
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from scoring.core.latency import overall_latency_stats

WIDTH = 640
HEIGHT = 200
MARGIN = 30


@dataclass
class GroupBar:
    group: str
    passed: int
    failed: int
    other: int
    x: float = 0.0
    width: float = 0.0
    pass_y: float = 0.0
    pass_height: float = 0.0
    fail_y: float = 0.0
    fail_height: float = 0.0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.other


def group_bars(outcomes: Iterable[tuple[str, bool | None]]) -> list[GroupBar]:
    """Stacked bars (passed at the bottom, failed above) per group, groups in numeric order."""
    counts: dict[str, GroupBar] = {}
    for group, success in outcomes:
        bar = counts.setdefault(group, GroupBar(group, 0, 0, 0))
        if success is True:
            bar.passed += 1
        elif success is False:
            bar.failed += 1
        else:
            bar.other += 1
    bars = sorted(counts.values(), key=lambda b: (b.group == "other", b.group.zfill(8)))
    if not bars:
        return []
    tallest = max(b.total for b in bars) or 1
    slot = (WIDTH - 2 * MARGIN) / len(bars)
    scale = (HEIGHT - 2 * MARGIN) / tallest
    floor = HEIGHT - MARGIN
    for index, bar in enumerate(bars):
        bar.x = MARGIN + index * slot + slot * 0.15
        bar.width = slot * 0.7
        bar.pass_height = bar.passed * scale
        bar.pass_y = floor - bar.pass_height
        bar.fail_height = bar.failed * scale
        bar.fail_y = bar.pass_y - bar.fail_height
    return bars


@dataclass
class Histogram:
    count: int
    p50_ms: float
    p95_ms: float
    max_ms: float
    bins: list[dict[str, float]] = field(default_factory=list)
    p50_x: float = 0.0
    p95_x: float = 0.0


def latency_histogram(values: Iterable[float], bin_count: int = 20) -> Histogram | None:
    """Every measured handoff in ``bin_count`` equal bins from 0 to the maximum; None if none."""
    ordered = sorted(float(v) for v in values if math.isfinite(v) and v >= 0)
    if not ordered:
        return None
    stats = overall_latency_stats(ordered)
    top = ordered[-1] or 1.0
    width = top / bin_count
    counts = [0] * bin_count
    for value in ordered:
        counts[min(int(value / width), bin_count - 1)] += 1
    tallest = max(counts)
    plot_width = WIDTH - 2 * MARGIN
    scale_x = plot_width / top
    scale_y = (HEIGHT - 2 * MARGIN) / tallest
    histogram = Histogram(count=len(ordered), p50_ms=stats["p50_ms"], p95_ms=stats["p95_ms"], max_ms=top)
    for index, count in enumerate(counts):
        height = count * scale_y
        histogram.bins.append({"x": MARGIN + index * plot_width / bin_count, "width": plot_width / bin_count - 1,
                               "y": HEIGHT - MARGIN - height, "height": height, "count": count,
                               "low": index * width, "high": (index + 1) * width})
    histogram.p50_x = MARGIN + stats["p50_ms"] * scale_x
    histogram.p95_x = MARGIN + stats["p95_ms"] * scale_x
    return histogram


CONDITION_LABEL_WIDTH = 200
CONDITION_ROW = 26


@dataclass
class ConditionBar:
    """One condition's pass rate as a horizontal bar, with its 95% interval as a whisker."""

    name: str
    passes: int
    counted: int
    y: float
    width: float
    low_x: float
    high_x: float


def condition_bars(rows: Iterable) -> tuple[list[ConditionBar], float]:
    """Bars for ``scoring.core.condition_table`` rows (one per condition, in run order) and the
    chart's height; a condition without verdicts gets an empty bar."""
    span = WIDTH - MARGIN - CONDITION_LABEL_WIDTH
    bars = []
    for index, row in enumerate(rows):
        rate = row.rate or 0.0
        low, high = row.interval or (0.0, 0.0)
        bars.append(ConditionBar(row.name, row.passes, row.counted, y=10 + index * CONDITION_ROW, width=rate * span,
                                 low_x=CONDITION_LABEL_WIDTH + low * span, high_x=CONDITION_LABEL_WIDTH + high * span))
    return bars, 20 + len(bars) * CONDITION_ROW
