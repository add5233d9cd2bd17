"""The recording's turn timeline (drawn above the transcript) and the per-turn latency strip:
positions as percentages, so the page lays them out with CSS alone and they scale with any width.

Pure: inputs are the timeline's turn items and the metrics' ``latencies``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scoring.core.latency import latency_stats, latency_values

MIN_WIDTH_PERCENT = 0.4  # a very short turn stays clickable


@dataclass(frozen=True)
class Segment:
    index: int
    role: str
    start: float
    end: float
    left: float
    width: float
    text: str


def turn_segments(turns: Iterable[Any]) -> tuple[list[Segment], float]:
    """Segments of the turns that have a place in the recording, and the recording's length."""
    placed = [t for t in turns if getattr(t, "start", None) is not None]
    if not placed:
        return [], 0.0
    length = max(float(t.end if t.end is not None else t.start) for t in placed) or 1.0
    segments = []
    for turn in placed:
        start = float(turn.start)
        end = float(turn.end) if turn.end is not None and turn.end > start else start
        left = min(100.0, start / length * 100)
        width = max(MIN_WIDTH_PERCENT, min((end - start) / length * 100, 100.0 - left))
        segments.append(Segment(turn.index, turn.role, start, end, left, width, turn.text[:120]))
    return segments, length


@dataclass(frozen=True)
class LatencyBar:
    number: int
    latency_ms: float
    height: float  # percent of the tallest
    user_text: str
    agent_text: str
    slow: bool  # at or above the scenario's p95


def latency_strip(latencies: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    """One bar per measured handoff, in order, scaled to the slowest, with p50/p95 as lines."""
    entries = [e for e in (latencies or []) if isinstance(e, Mapping)]
    values = latency_values(entries)
    if not values:
        return {"bars": [], "p50": None, "p95": None}
    stats = latency_stats(values)
    top = max(values) or 1.0
    bars = []
    number = 0
    for entry in entries:
        value = entry.get("latency_ms")
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        number += 1
        bars.append(LatencyBar(number, float(value), float(value) / top * 100,
                               str(entry.get("user_transcript") or "")[:160],
                               str(entry.get("agent_transcript") or "")[:160], float(value) >= stats["p95_ms"]))
    return {"bars": bars, "p50": stats["p50_ms"], "p95": stats["p95_ms"], "max": top,
            "p50_height": stats["p50_ms"] / top * 100, "p95_height": stats["p95_ms"] / top * 100}
