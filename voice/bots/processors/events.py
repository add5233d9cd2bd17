"""RTVI event dicts the bots emit (harness.md §5.9); kept local so the bots need no other module."""
from __future__ import annotations

from typing import Any

RTVI_LABEL = "rtvi-ai"
EXIT_FINISHED = "<exit>The task is finished.</exit>"
EXIT_TRANSFER = "<exit>Transfer complete.</exit>"


def rtvi_event(event_type: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    """One unsolicited bot -> bridge message in pipecat's RTVI envelope."""
    message: dict[str, Any] = {"label": RTVI_LABEL, "type": event_type}
    if data is not None:
        message["data"] = data
    return message


def server_message(data: dict[str, Any]) -> dict[str, Any]:
    return rtvi_event("server-message", data)


def utterance_event(role: str, text: str) -> dict[str, Any]:
    """Text modality: one finished utterance (harness.md §6.7)."""
    return rtvi_event("utterance", {"role": role, "text": text})
