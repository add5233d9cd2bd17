"""Known-good tool call lists per scenario (tools.md §8 plus the reads a careful agent makes first).

Used by replay tests and by scripted agents; each list ends with ``end_conversation``.
"""
from __future__ import annotations

import copy
import functools
import json
from pathlib import Path

GOLD_CALLS_FILE = Path(__file__).with_name("gold_calls.json")


@functools.cache
def _all_gold_calls() -> dict[str, dict]:
    return json.loads(GOLD_CALLS_FILE.read_text(encoding="utf-8"))


def gold_calls(eva_id: str) -> list[dict]:
    """A fresh copy of the gold call list of ``eva_id``; KeyError for an unknown id."""
    entry = _all_gold_calls().get(eva_id)
    if entry is None:
        raise KeyError(f"no gold calls for eva id {eva_id!r}")
    return copy.deepcopy(entry["calls"])


def gold_eva_ids() -> list[str]:
    """Every eva id that has a gold call list, in file order."""
    return list(_all_gold_calls())
