"""The result page's conversation: transcript turns interleaved with the agent's tool calls (name,
arguments, result status, error) and the actions those calls recorded, so a reviewer sees *why*
the database diverged. Each call keeps its result (shown collapsed), each turn its place in the
recording and the latency of the handoff it answered.

Pure: inputs are the parsed ``metrics["turns"]``, the agent's ``llm_context.json`` and
``final_agent_response.json``; tool calls are placed before the agent reply that followed them.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ToolCall:
    name: str
    arguments: Any
    call_id: str = ""
    status: str = "no result"
    error_type: str = ""
    message: str = ""
    actions: list[dict[str, Any]] = field(default_factory=list)
    result: Any = None
    has_result: bool = False
    kind: str = "tool"

    @property
    def arguments_text(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False, sort_keys=True)

    @property
    def result_text(self) -> str:
        """The tool's answer, pretty-printed (a plain string stays as it came)."""
        if isinstance(self.result, str):
            return self.result
        return json.dumps(self.result, ensure_ascii=False, indent=2, sort_keys=True)


@dataclass
class TurnItem:
    role: str
    text: str
    heard: str | None = None
    timestamp: str = ""
    start: float | None = None
    end: float | None = None
    misheard: list[Any] = field(default_factory=list)
    latency_ms: float | None = None
    index: int = 0
    kind: str = "turn"


def _parse_json(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def tool_calls_by_reply(context: Iterable[Mapping[str, Any]]) -> dict[int, list[ToolCall]]:
    """Tool calls keyed by how many spoken agent replies preceded them, results attached."""
    grouped: dict[int, list[ToolCall]] = {}
    by_id: dict[str, ToolCall] = {}
    replies = 0
    last: ToolCall | None = None
    for message in context:
        role = message.get("role")
        if role == "assistant":
            for raw in message.get("tool_calls") or []:
                function = raw.get("function") or {}
                call = ToolCall(str(function.get("name", "?")), _parse_json(function.get("arguments")),
                                str(raw.get("id", "")))
                grouped.setdefault(replies, []).append(call)
                by_id[call.call_id] = last = call
            if isinstance(message.get("content"), str) and message["content"].strip():
                replies += 1
        elif role == "tool":
            call = by_id.get(str(message.get("tool_call_id", ""))) or last
            if call is None:
                continue
            result = _parse_json(message.get("content"))
            call.result, call.has_result = result, True
            if isinstance(result, Mapping):
                call.status = str(result.get("status", "returned"))
                call.error_type = str(result.get("error_type") or "")
                call.message = str(result.get("message") or "") if call.status == "error" else ""
            else:
                call.status = "returned"
    return grouped


def attach_actions(calls: Iterable[ToolCall], actions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Give each recorded action to the first successful call of the same tool without one;
    returns the actions no call explains (shown on their own)."""
    pool = [call for call in calls if call.status == "success"]
    unmatched = []
    for action in actions:
        action_type = action.get("action_type")
        owner = next((c for c in pool if c.name == action_type and not c.actions), None)
        if owner is None:
            unmatched.append(dict(action))
        else:
            owner.actions.append(dict(action))
    return unmatched


def build_timeline(turns: Iterable[Mapping[str, Any]], context: list[Mapping[str, Any]] | None,
                   actions: list[Mapping[str, Any]] | None,
                   segments: list[tuple[float | None, float | None]] | None = None,
                   latencies: list[Mapping[str, Any]] | None = None) -> tuple[list[Any], list[dict[str, Any]]]:
    """``(items, unmatched actions)``: turns in order with each agent reply preceded by the tool
    calls made before it; calls after the last reply come at the end. ``segments`` are the
    turns' ``(start, end)`` seconds in the recording."""
    grouped = tool_calls_by_reply(context or [])
    unmatched = attach_actions([c for calls in grouped.values() for c in calls], actions or [])
    items: list[Any] = []
    agent_replies = 0
    spans = list(segments or [])
    for index, turn in enumerate(turns):
        role = str(turn.get("role") or "?")
        if role == "agent":
            items += grouped.pop(agent_replies, [])
            agent_replies += 1
        start, end = spans[index] if index < len(spans) else (None, None)
        items.append(TurnItem(role, str(turn.get("text") or ""), turn.get("heard"), str(turn.get("timestamp") or ""),
                              start, end, index=index))
    for key in sorted(grouped):
        items += grouped[key]
    attach_latencies([item for item in items if isinstance(item, TurnItem)], latencies or [])
    return items, unmatched


def attach_latencies(turns: list[TurnItem], latencies: Iterable[Mapping[str, Any]]) -> None:
    """Give each measured handoff to the agent turn that ended it: the next agent turn (in order)
    whose text begins with the handoff's ``agent_transcript``; a handoff that matches none is
    left out here (the latency strip still shows it)."""
    cursor = 0
    for entry in latencies:
        value = entry.get("latency_ms")
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        said = " ".join(str(entry.get("agent_transcript") or "").split())[:40]
        for position in range(cursor, len(turns)):
            turn = turns[position]
            if turn.role == "agent" and " ".join(turn.text.split()).startswith(said):
                turn.latency_ms = float(value)
                cursor = position + 1
                break


def final_actions(payload: Any) -> list[dict[str, Any]]:
    """The ``actions`` of ``final_agent_response.json`` (a list of one object, or the object)."""
    if isinstance(payload, list):
        payload = payload[0] if payload else {}
    actions = payload.get("actions") if isinstance(payload, Mapping) else None
    return [a for a in actions if isinstance(a, Mapping)] if isinstance(actions, list) else []
