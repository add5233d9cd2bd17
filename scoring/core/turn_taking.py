"""Turn-taking measured from the bridge's speech timeline: gaps, overlaps, interruptions,
yield time, talk-over, silence and speaking rate, plus eva's per-turn timing labels.

Pure and deterministic (plain Python, no judge). Input is the engine's ``speech_timeline``
(``{"agent": [[start_s, end_s], ...], "user": [...]}``, audio time since the conversation
start, sorted and non-overlapping within a side) and, for words per minute, the metrics'
``turns``. docs/turn_taking.md defines every figure and says where we differ from eva.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from scoring.core.latency import latency_stats

EARLY_MS = 200.0
"""eva: a response starting less than 200 ms after the caller stopped is early/interrupting."""
LATE_MS = 4000.0
"""eva: one starting 4 s or more after is late; in between is on time."""
PAUSE_S = 0.5
"""An agent still counts as talking across pauses shorter than this (between sentences), so a
yield is the agent's audio *stopping*, not its next breath."""
LABEL_RATING = {"overlap": -1, "early": -1, "on_time": 0, "late": 1}
"""eva's scale: -1 early/interrupting, 0 on time, +1 late (a negative gap is an overlap, early)."""
WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")

Segment = tuple[float, float]


def _segments(timeline: Mapping[str, Any], side: str) -> list[Segment]:
    """One side's segments as floats, sorted, touching or overlapping ones merged."""
    raw = timeline.get(side) or []
    segments = []
    for item in raw:
        start, end = float(item[0]), float(item[1])
        if start < 0 or end < start:
            raise ValueError(f"{side} segment [{start}, {end}] is not a forward interval in audio time")
        if end > start:
            segments.append((start, end))
    segments.sort()
    merged: list[Segment] = []
    for start, end in segments:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _intersections(a: Sequence[Segment], b: Sequence[Segment]) -> list[Segment]:
    """Where both sides speak at once (two-pointer sweep over sorted, disjoint lists)."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if end > start:
            if out and start <= out[-1][1]:
                out[-1] = (out[-1][0], end)
            else:
                out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _speaking_at(segments: Sequence[Segment], t: float) -> Optional[int]:
    """Index of the segment strictly around ``t`` (started before it, not yet ended), if any."""
    for index, (start, end) in enumerate(segments):
        if start < t < end:
            return index
        if start >= t:
            break
    return None


def _spells(segments: Sequence[Segment], pause_s: float) -> list[Segment]:
    """Segments joined across pauses shorter than ``pause_s``: how long someone holds the floor."""
    spells: list[Segment] = []
    for start, end in segments:
        if spells and start - spells[-1][1] < pause_s:
            spells[-1] = (spells[-1][0], end)
        else:
            spells.append((start, end))
    return spells


def _label(gap_ms: float, early_ms: float, late_ms: float) -> str:
    if gap_ms < 0:
        return "overlap"
    if gap_ms < early_ms:
        return "early"
    return "on_time" if gap_ms < late_ms else "late"


def _handoffs(agent: Sequence[Segment], user: Sequence[Segment]) -> list[tuple[float, float]]:
    """Each user→agent change of floor as (user_end_s, agent_start_s).

    ``agent`` are the agent's spells and ``user`` the caller's segments. Both are put in start
    order and grouped into turns: a run of one side's items with no item of the other side
    starting in between. A handoff is a user turn followed by an agent turn; its gap runs from
    the user turn's last end to the agent turn's first start (negative when the agent started
    before the caller had finished). A caller's interjection that ends while the agent's spell
    goes on hands nothing over: that spell started first, so no agent turn follows it."""
    events = sorted([(s, e, "agent") for s, e in agent] + [(s, e, "user") for s, e in user])
    out = []
    turn_side, turn_end = None, 0.0
    for start, end, side in events:
        if side == turn_side:
            turn_end = max(turn_end, end)
            continue
        if turn_side == "user" and side == "agent":
            out.append((turn_end, start))
        turn_side, turn_end = side, end
    return out


def _words(turns: Optional[Sequence[Mapping[str, Any]]], role: str) -> Optional[int]:
    if turns is None:
        return None
    return sum(len(WORD.findall(str(turn.get("text") or ""))) for turn in turns if turn.get("role") == role)


def _per_minute(words: Optional[int], seconds: float) -> Optional[float]:
    if words is None or seconds <= 0:
        return None
    return words / (seconds / 60.0)


def turn_taking(
    timeline: Mapping[str, Any],
    turns: Optional[Sequence[Mapping[str, Any]]] = None,
    *,
    duration_s: Optional[float] = None,
    early_ms: float = EARLY_MS,
    late_ms: float = LATE_MS,
    pause_s: float = PAUSE_S,
) -> dict[str, Any]:
    """Turn-taking figures for one conversation (every key always present; ``None`` where
    nothing was there to measure, e.g. no handoff). ``duration_s`` defaults to the last speech
    end; pass the conversation's audio length so trailing silence counts too."""
    agent, user = _segments(timeline, "agent"), _segments(timeline, "user")
    last_end = max([end for _, end in agent + user], default=0.0)
    duration = max(float(duration_s) if duration_s is not None else last_end, last_end)

    overlaps = _intersections(agent, user)
    agent_s = sum(end - start for start, end in agent)
    user_s = sum(end - start for start, end in user)
    overlap_s = sum(end - start for start, end in overlaps)
    silence_s = duration - (agent_s + user_s - overlap_s)

    spells = _spells(agent, pause_s)
    handoffs = []
    for user_end, agent_start in _handoffs(spells, user):
        gap_ms = (agent_start - user_end) * 1000.0
        handoffs.append({"user_end_s": round(user_end, 3), "agent_start_s": round(agent_start, 3),
                         "gap_ms": round(gap_ms, 1), "label": _label(gap_ms, early_ms, late_ms)})
    gaps = [h["gap_ms"] for h in handoffs]
    ratings = [LABEL_RATING[h["label"]] for h in handoffs]
    counts = {label: sum(1 for h in handoffs if h["label"] == label) for label in LABEL_RATING}

    # A user interruption: the caller starts while an agent spell goes on (counted once per
    # spell); its yield time runs from that start to the spell's end, the agent's audio stopping.
    interruptions, cut_into = [], set()
    for start, _ in user:
        index = _speaking_at(spells, start)
        if index is None or index in cut_into:
            continue
        cut_into.add(index)
        stopped = spells[index][1]
        interruptions.append({"at_s": round(start, 3), "agent_stopped_s": round(stopped, 3),
                              "yield_ms": round((stopped - start) * 1000.0, 1)})
    # Talk-over: an agent spell that starts while the caller is speaking.
    talk_over = [{"at_s": round(start, 3)} for start, _ in spells if _speaking_at(user, start) is not None]

    abs_mean = sum(abs(r) for r in ratings) / len(ratings) if ratings else None
    return {
        "duration_s": round(duration, 3),
        "speech_s": {"agent": round(agent_s, 3), "user": round(user_s, 3)},
        "silence_share": round(silence_s / duration, 4) if duration > 0 else None,
        "overlap_count": len(overlaps),
        "overlap_s": round(overlap_s, 3),
        "handoffs": handoffs,
        "response_gap_stats": latency_stats(gaps),
        "timing_counts": counts,
        "timing_mean": round(sum(ratings) / len(ratings), 4) if ratings else None,
        "timing_abs_mean": round(abs_mean, 4) if abs_mean is not None else None,
        "timing_score": round(1.0 - abs_mean, 4) if abs_mean is not None else None,
        "user_interruptions": len(interruptions),
        "interruptions": interruptions,
        "yield_stats": latency_stats(i["yield_ms"] for i in interruptions),
        "agent_talk_over": len(talk_over),
        "talk_over": talk_over,
        "words_per_minute": {"agent": _round(_per_minute(_words(turns, "agent"), agent_s)),
                             "user": _round(_per_minute(_words(turns, "user"), user_s))},
        "params": {"early_ms": early_ms, "late_ms": late_ms, "pause_s": pause_s},
    }


def _round(value: Optional[float]) -> Optional[float]:
    return round(value, 1) if value is not None else None
