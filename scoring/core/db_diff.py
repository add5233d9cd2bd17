"""Structured database diff (tools.md §6.2): a debugging aid for result pages and tests.

It never decides a score (the hash does); it only explains why two databases hash differently,
so it normalises exactly like the hash does and sorts the same order-independent lists.
"""
from __future__ import annotations

from typing import Any

from scoring.core.canonical import (
    EXCLUDED_TOP_LEVEL_KEYS,
    ORDER_INDEPENDENT_LIST_FIELDS,
    normalize,
    sort_key,
)

Diff = dict[str, Any]


def gold_diff(expected: dict[str, Any], actual: dict[str, Any]) -> Diff:
    """``db_diff`` with the excluded top-level keys (``session``) stripped from both sides, as
    tools.md §5 asks: the gold's empty session in 7.1.1 / 7.4.1 would otherwise be noise."""
    return db_diff(
        {k: v for k, v in expected.items() if k not in EXCLUDED_TOP_LEVEL_KEYS},
        {k: v for k, v in actual.items() if k not in EXCLUDED_TOP_LEVEL_KEYS},
    )


def db_diff(expected: dict[str, Any], actual: dict[str, Any]) -> Diff:
    """Tables added/removed/modified between ``expected`` and ``actual``.

    ``session`` is not dropped here: callers strip it from both sides first (§6.2).
    """
    modified: dict[str, Any] = {}
    for table in sorted(set(expected) & set(actual)):
        table_diff = _table_diff(expected[table], actual[table])
        if table_diff:
            modified[table] = table_diff
    return {
        "tables_added": sorted(set(actual) - set(expected)),
        "tables_removed": sorted(set(expected) - set(actual)),
        "tables_modified": modified,
    }


def _table_diff(expected: Any, actual: Any) -> Diff | None:
    if not isinstance(expected, dict) or not isinstance(actual, dict):
        # Scalar "tables" such as _current_date are compared raw, without normalisation.
        if expected == actual:
            return None
        return {"type": "non_dict_table", "expected": expected, "actual": actual}
    records: dict[str, Any] = {}
    for key in sorted(set(expected) & set(actual)):
        record_diff = value_diff(expected[key], actual[key], str(key))
        if record_diff:
            records[str(key)] = record_diff
    added = sorted(set(actual) - set(expected))
    removed = sorted(set(expected) - set(actual))
    if not (added or removed or records):
        return None
    return {"records_added": added, "records_removed": removed, "records_modified": records}


def value_diff(expected: Any, actual: Any, field: str | None = None) -> Diff | None:
    """Diff of two values (§6.2 steps 1-5); ``field`` is the key they sit under, if any."""
    expected = normalize(expected)
    actual = normalize(actual)
    return _normalized_diff(expected, actual, field)


def _normalized_diff(expected: Any, actual: Any, field: str | None) -> Diff | None:
    if _same(expected, actual):
        return None
    if type(expected) is not type(actual):
        return {
            "type": "type_mismatch",
            "expected": expected,
            "actual": actual,
            "expected_type": type(expected).__name__,
            "actual_type": type(actual).__name__,
        }
    if isinstance(expected, dict):
        return _dict_diff(expected, actual)
    if isinstance(expected, list):
        return _list_diff(expected, actual, field)
    return {"type": "value_mismatch", "expected": expected, "actual": actual}


def _same(expected: Any, actual: Any) -> bool:
    # Compare as the hash sees them: Python's == would call True equal to 1 and hide the
    # very difference that changed the hash.
    return type(expected) is type(actual) and sort_key(expected) == sort_key(actual)


def _dict_diff(expected: dict[str, Any], actual: dict[str, Any]) -> Diff | None:
    fields: dict[str, Any] = {}
    for key in sorted(set(expected) & set(actual)):
        sub = _normalized_diff(expected[key], actual[key], key)
        if sub:
            fields[key] = sub
    added = sorted(set(actual) - set(expected))
    removed = sorted(set(expected) - set(actual))
    if not (added or removed or fields):
        return None
    return {"fields_added": added, "fields_removed": removed, "fields_modified": fields}


def _list_diff(expected: list[Any], actual: list[Any], field: str | None) -> Diff | None:
    if field in ORDER_INDEPENDENT_LIST_FIELDS:
        # normalize() already sorted these when they sat under a dict; sorting again is harmless
        # and covers a list handed in directly with its field name.
        expected = sorted(expected, key=sort_key)
        actual = sorted(actual, key=sort_key)
    if len(expected) != len(actual):
        return {
            "type": "list_length_mismatch",
            "expected": expected,
            "actual": actual,
            "expected_length": len(expected),
            "actual_length": len(actual),
        }
    differences = []
    for index, (left, right) in enumerate(zip(expected, actual)):
        sub = _normalized_diff(left, right, None)
        if sub:
            differences.append({"index": index, "diff": sub})
    if not differences:
        return None
    return {"type": "list_differences", "differences": differences}


def diff_summary(diff: Diff, *, max_keys: int = 3) -> str:
    """One line for a CI failure message: what changed per table, with a few record keys, e.g.
    ``reservations: 1 modified (ZK3FFW); journeys: 2 added (J1, J2)``. The structured diff stays
    the reference; this only says where to look."""
    parts = [f"{table}: table added" for table in diff.get("tables_added", [])]
    parts += [f"{table}: table removed" for table in diff.get("tables_removed", [])]
    for table, change in diff.get("tables_modified", {}).items():
        if change.get("type") == "non_dict_table":
            parts.append(f"{table}: {change.get('expected')!r} → {change.get('actual')!r}")
            continue
        counts = []
        for label, key in (("modified", "records_modified"), ("added", "records_added"), ("removed", "records_removed")):
            keys = list(change.get(key) or [])
            if keys:
                shown = ", ".join(map(str, keys[:max_keys])) + (", …" if len(keys) > max_keys else "")
                counts.append(f"{len(keys)} {label} ({shown})")
        parts.append(f"{table}: {', '.join(counts)}")
    return "; ".join(parts) if parts else "no difference"
