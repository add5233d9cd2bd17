"""Canonical database hash (tools.md §6.1). Pure Python, no Django.

Byte-identical to upstream: every vector in tools.md §7 is a test.
"""
from __future__ import annotations

import hashlib
import json
import math
from typing import Any

EXCLUDED_TOP_LEVEL_KEYS = frozenset({"session"})
ORDER_INDEPENDENT_LIST_FIELDS = frozenset(
    {"standby_list", "notifications", "bookings", "system_accounts", "group_memberships", "asset_recoveries"}
)


def sort_key(value: Any) -> str:
    # Spaced default separators on purpose: upstream sorts by this text, not the compact form.
    return json.dumps(value, sort_keys=True, ensure_ascii=True, default=str)


def normalize(value: Any) -> Any:
    """Return a normalised copy: whole floats -> int, "none"/"null" -> None, order-independent
    lists sorted by their JSON text."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            norm = normalize(item)
            if key in ORDER_INDEPENDENT_LIST_FIELDS and isinstance(norm, list):
                norm = sorted(norm, key=sort_key)
            out[key] = norm
        return out
    if isinstance(value, list):
        return [normalize(item) for item in value]
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value):
            return int(value)
        return value
    if isinstance(value, str):
        if value.strip().lower() in ("none", "null"):
            return None
        return value
    return value


def canonical_json(db: Any) -> str:
    """The canonical text that is hashed."""
    if isinstance(db, dict):
        db = {k: v for k, v in db.items() if k not in EXCLUDED_TOP_LEVEL_KEYS}
    return json.dumps(normalize(db), sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)


def db_hash(db: Any) -> str:
    """SHA-256 (lowercase hex) of the canonical JSON of ``db``."""
    return hashlib.sha256(canonical_json(db).encode("utf-8")).hexdigest()
