"""End-of-scenario state: context parsing and the two-summary merge (harness.md §5.6, §5.8)."""
from __future__ import annotations

import json
from typing import Any


def parse_context(response: Any) -> list:
    """The message list from a ``get_context_history`` response; [] when unusable (never eval)."""
    if not isinstance(response, dict):
        return []
    raw = response.get("context")
    try:
        messages = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return []
    return messages if isinstance(messages, list) else []


def merge_summaries(agent: dict | None, user: dict | None) -> dict:
    """Agent summary ({} when its pull failed) plus the user's hash and its actions tagged
    ``side: user``. The user is never asked for its database, so ``user_db`` is never merged."""
    summary = dict(agent or {})
    user = user or {}
    summary["user_db_hash"] = user.get("db_hash")
    user_actions = user.get("actions") or []
    if user_actions:
        summary["actions"] = list(summary.get("actions") or []) + [
            {**action, "side": "user"} for action in user_actions if isinstance(action, dict)
        ]
    return summary
