"""The database diff as the result page draws it: a uniform tree of labelled lines, so one
recursive template renders any depth. Lists that differ in length are laid out item by item
(kept, missing, extra, changed) instead of as two JSON blobs a reviewer has to compare by eye.

Pure presenter over ``scoring.core.db_diff`` output.
"""
from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Any

from scoring.core.canonical import sort_key
from scoring.core.db_diff import value_diff

# An item is summarised by these fields when it has them (ids say which item it is).
_ID_FIELDS = ("id", "flight_number", "segment_id", "journey_id", "seat", "passenger_id", "name", "code")
SUMMARY_CHARS = 160


@dataclass
class DiffNode:
    """One line: a label, optionally the expected and actual value, and nested lines."""

    label: str
    expected: str | None = None
    actual: str | None = None
    children: list[DiffNode] = field(default_factory=list)
    kind: str = ""  # "missing", "extra" or "" (changed / structure)


def diff_outline(diff: dict[str, Any]) -> list[DiffNode]:
    nodes = [DiffNode(f"table added: {name}", kind="extra") for name in diff.get("tables_added", [])]
    nodes += [DiffNode(f"table removed: {name}", kind="missing") for name in diff.get("tables_removed", [])]
    for table, table_diff in diff.get("tables_modified", {}).items():
        nodes.append(DiffNode(f"table {table}", children=_table_nodes(table_diff)))
    return nodes


def _table_nodes(table_diff: dict[str, Any]) -> list[DiffNode]:
    if table_diff.get("type") == "non_dict_table":
        return [_mismatch_node("value", table_diff)]
    nodes = [DiffNode(f"record added: {key}", kind="extra") for key in table_diff.get("records_added", [])]
    nodes += [DiffNode(f"record removed: {key}", kind="missing") for key in table_diff.get("records_removed", [])]
    for key, record_diff in table_diff.get("records_modified", {}).items():
        nodes.append(DiffNode(f"record {key}", children=_value_nodes(record_diff)))
    return nodes


def _value_nodes(diff: dict[str, Any]) -> list[DiffNode]:
    kind = diff.get("type")
    if kind == "list_differences":
        return [DiffNode(f"item {item['index'] + 1}", children=_value_nodes(item["diff"]))
                for item in diff["differences"]]
    if kind == "list_length_mismatch":
        return list_items(diff.get("expected") or [], diff.get("actual") or [])
    if kind == "type_mismatch":
        return [_mismatch_node(f"type {diff['expected_type']} expected, {diff['actual_type']} actual", diff)]
    if kind is not None:
        return [_mismatch_node("value", diff)]
    nodes = [DiffNode(f"field added: {name}", kind="extra") for name in diff.get("fields_added", [])]
    nodes += [DiffNode(f"field removed: {name}", kind="missing") for name in diff.get("fields_removed", [])]
    for name, sub in diff.get("fields_modified", {}).items():
        kind = sub.get("type")
        if kind not in (None, "list_differences", "list_length_mismatch"):
            # A leaf mismatch reads better on the field's own line than one level down.
            leaf = _value_nodes(sub)[0]
            suffix = "" if leaf.label == "value" else f" ({leaf.label})"
            nodes.append(DiffNode(f"{name}{suffix}", leaf.expected, leaf.actual))
        else:
            if kind == "list_length_mismatch":
                name = f"{name} ({sub['expected_length']} item{'s' if sub['expected_length'] != 1 else ''} expected, " \
                       f"{sub['actual_length']} found)"
            nodes.append(DiffNode(name, children=_value_nodes(sub)))
    return nodes


def list_items(expected: list[Any], actual: list[Any]) -> list[DiffNode]:
    """Align two lists (longest common run of equal items) and describe what differs per item:
    missing from the agent's list, extra in it, or changed in place (a nested diff)."""
    left = [sort_key(item) for item in expected]
    right = [sort_key(item) for item in actual]
    nodes: list[DiffNode] = []
    matcher = difflib.SequenceMatcher(a=left, b=right, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        pairs = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for offset in range(pairs):  # changed in place: show what changed inside the item
            sub = value_diff(expected[i1 + offset], actual[j1 + offset])
            label = f"item {i1 + offset + 1} changed: {summarise(expected[i1 + offset])}"
            children = _value_nodes(sub) if isinstance(sub, dict) else []
            nodes.append(DiffNode(label, children=children))
        for index in range(i1 + pairs, i2):
            nodes.append(DiffNode(f"item {index + 1} missing: {summarise(expected[index])}", kind="missing"))
        for index in range(j1 + pairs, j2):
            nodes.append(DiffNode(f"extra item {index + 1}: {summarise(actual[index])}", kind="extra"))
    return nodes


def summarise(item: Any) -> str:
    """A one-line description of a list item: its identifying fields first, bounded in length."""
    if isinstance(item, dict):
        keys = [key for key in _ID_FIELDS if key in item] + [key for key in item if key not in _ID_FIELDS]
        text = ", ".join(f"{key}={_compact(item[key])}" for key in keys)
    else:
        text = _compact(item)
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _mismatch_node(label: str, diff: dict[str, Any]) -> DiffNode:
    # Leaf values keep their JSON form, so "1" and 1 (or "" and null) stay distinguishable.
    return DiffNode(label, _json(diff.get("expected")), _json(diff.get("actual")))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
