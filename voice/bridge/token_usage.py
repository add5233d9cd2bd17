"""Per-side token usage as the bridge rolls it up from ``metrics`` events (harness.md §10.1).

Project addition to the upstream ``{n_calls, prompt, completion}``: where the counts came from.
``source`` is ``server`` (the endpoint's own ``usage``), ``estimate`` (the built-in models),
``unknown`` (a response that carried no usage: it still counts as a call, for the stall rule,
but its tokens are not invented), ``mixed`` or ``none`` (no call yet). When no response of a
side carried usage, its ``prompt`` and ``completion`` are null rather than a misleading 0.
"""
from __future__ import annotations

from voice.protocol.rtvi import TokenEntry

NO_CALLS = "none"
MIXED = "mixed"


def empty_usage() -> dict:
    return {"n_calls": 0, "prompt": 0, "completion": 0, "source": NO_CALLS, "calls_without_usage": 0}


def add_entry(usage: dict, entry: TokenEntry) -> None:
    """Fold one completion's entry into a side's usage dict (in place)."""
    first = usage["n_calls"] == 0
    usage["n_calls"] += 1
    usage["source"] = entry.source if first or usage["source"] == entry.source else MIXED
    if entry.prompt is None and entry.completion is None:
        usage["calls_without_usage"] += 1
    else:
        usage["prompt"] = (usage["prompt"] or 0) + (entry.prompt or 0)
        usage["completion"] = (usage["completion"] or 0) + (entry.completion or 0)
    if usage["calls_without_usage"] == usage["n_calls"]:
        usage["prompt"] = usage["completion"] = None
