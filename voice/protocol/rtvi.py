"""RTVI envelope builders and parsers (harness.md §5).

Every control message between the bridge and a bot is a dict in pipecat's RTVI envelope:
``{"label": "rtvi-ai", "type": ..., "id": ..., "data": ...}``. Both the bridge and the bot host
build and read messages only through these helpers so the shapes live in one place.
"""
from __future__ import annotations

import itertools
import time
from typing import Any, NamedTuple

from voice.modality import MODALITIES

LABEL = "rtvi-ai"
PROTOCOL_VERSION = "1.1.0"
LIBRARY = "evasite"

EXIT_OPEN, EXIT_CLOSE = "<exit>", "</exit>"
FINAL_OPEN, FINAL_CLOSE = "<final_response>", "</final_response>"
DEFAULT_EXIT_TEXT = "The task is finished."
ACTION_APPLIED = "action-applied"

# Event types that count as "meaningful activity" for the inactivity timer (§9.2).
_ACTIVITY_TYPES = frozenset(
    {
        "bot-started-speaking",
        "bot-stopped-speaking",
        "user-started-speaking",
        "user-stopped-speaking",
        "bot-tts-started",
        "bot-tts-text",
        "bot-tts-stopped",
        "server-message",
        "llm-function-call",
        "action",
    }
)

_sequence = itertools.count(1)


def envelope(type_: str, data: Any = None, *, id_: str | None = None) -> dict:
    """One RTVI message; ``id`` only when given."""
    message: dict[str, Any] = {"label": LABEL, "type": type_}
    if id_ is not None:
        message["id"] = id_
    if data is not None:
        message["data"] = data
    return message


# --- bridge -> bot -------------------------------------------------------------------------


def client_ready() -> dict:
    """First message on every connection (§5.2)."""
    return envelope(
        "client-ready",
        {"version": PROTOCOL_VERSION, "about": {"library": LIBRARY, "library_version": "1"}},
        id_=f"client-ready_{next(_sequence)}",
    )


def request_id(name: str, side: str) -> str:
    """``<name>_<side>_<unix ts>`` plus a process-wide counter so two requests in the same
    second never share an id (responses are matched by id, §5.1)."""
    return f"{name}_{side}_{int(time.time())}_{next(_sequence)}"


def client_message(name: str, args: dict | None = None, *, side: str = "bot") -> dict:
    """A custom request ``{"t": name, "d": args}`` with a fresh unique id."""
    return envelope("client-message", {"t": name, "d": dict(args or {})}, id_=request_id(name, side))


def send_text(content: str = "Hello") -> dict:
    """The agent kickoff (§5.2): enters the context as a user message, answered aloud."""
    return envelope(
        "send-text",
        {"content": content, "options": {"run_immediately": True, "audio_response": True}},
        id_=f"send-text_{next(_sequence)}",
    )


# --- bot -> bridge: responses ----------------------------------------------------------------


def server_response(id_: str | None, name: str, result: Any) -> dict:
    """A handler's return value for request ``id_``."""
    return envelope("server-response", {"t": name, "d": result}, id_=id_)


def error_response(id_: str | None, error: str) -> dict:
    """Unknown request name or a raising handler (§5.1)."""
    return envelope("error-response", {"error": error}, id_=id_)


def error_text(exc: BaseException) -> str:
    """``<ExceptionType>: <message>``, the error convention of every handler."""
    return f"{type(exc).__name__}: {exc}"


# --- bot -> bridge: events -------------------------------------------------------------------


def bot_ready(modality: str | None = None) -> dict:
    """``modality`` (project addition): what the bot serves, so a bridge running the other
    modality refuses it at setup instead of idling into the inactivity timeout."""
    data: dict[str, Any] = {"version": PROTOCOL_VERSION, "about": {"library": LIBRARY, "library_version": "1"}}
    if modality is not None:
        data["modality"] = modality
    return envelope("bot-ready", data)


def stated_modality(message: dict | None) -> str | None:
    """The modality a ``bot-ready`` states, or None (bots that do not say)."""
    data = message_data(message) if isinstance(message, dict) else None
    value = data.get("modality") if isinstance(data, dict) else None
    return value if value in MODALITIES else None


def bot_started_speaking() -> dict:
    return envelope("bot-started-speaking")


def bot_stopped_speaking() -> dict:
    return envelope("bot-stopped-speaking")


def bot_tts_started() -> dict:
    return envelope("bot-tts-started")


def bot_tts_text(text: str) -> dict:
    return envelope("bot-tts-text", {"text": text})


def bot_tts_stopped() -> dict:
    return envelope("bot-tts-stopped")


def user_started_speaking() -> dict:
    return envelope("user-started-speaking")


def user_stopped_speaking() -> dict:
    return envelope("user-stopped-speaking")


def user_transcription(text: str, *, final: bool = True) -> dict:
    return envelope(
        "user-transcription",
        {"text": text, "final": final, "user_id": "", "timestamp": _iso_now()},
    )


USAGE_SERVER, USAGE_ESTIMATE, USAGE_UNKNOWN = "server", "estimate", "unknown"
"""Where a token entry's counts come from (the ``source`` of a metrics token entry)."""


def metrics(tokens: list[dict]) -> dict:
    """A ``metrics`` event carrying LLM usage entries, one per completion (§10.1)."""
    return envelope("metrics", {"tokens": tokens})


def metrics_tokens(prompt_tokens: int, completion_tokens: int) -> dict:
    """A ``metrics`` event carrying one LLM usage entry (§10.1)."""
    return metrics(
        [
            {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
        ]
    )


def llm_function_call(function_name: str, tool_call_id: str, args: dict) -> dict:
    """The tool-call notice a bot sends when its LLM calls a tool (§5.9)."""
    return envelope("llm-function-call", {"function_name": function_name, "tool_call_id": tool_call_id, "args": args})


def server_message(data: dict) -> dict:
    return envelope("server-message", data)


def exit_message(text: str = DEFAULT_EXIT_TEXT) -> dict:
    """The end-of-call signal pushed by ``end_conversation`` (§9.3)."""
    return server_message({"text": f"{EXIT_OPEN}{text}{EXIT_CLOSE}"})


def action_applied(action: dict, tool_domain: str) -> dict:
    return server_message({"type": ACTION_APPLIED, "action": action, "tool_domain": tool_domain})


def utterance(role: str, text: str) -> dict:
    """One finished utterance in text modality (§6.7); the only message ever forwarded."""
    return envelope("utterance", {"role": role, "text": text})


# --- parsers ---------------------------------------------------------------------------------


def message_type(message: dict) -> str:
    return str(message.get("type", ""))


def message_data(message: dict) -> Any:
    data = message.get("data")
    return {} if data is None else data


def request_parts(message: dict) -> tuple[str, dict]:
    """``(name, args)`` of a client-message; args default to ``{}`` (lenient, §5.1)."""
    data = message_data(message)
    if not isinstance(data, dict):
        return "", {}
    args = data.get("d")
    return str(data.get("t", "")), args if isinstance(args, dict) else {}


def server_text(message: dict) -> str | None:
    """``data.text`` of a server-message, else None."""
    if message_type(message) != "server-message":
        return None
    data = message_data(message)
    text = data.get("text") if isinstance(data, dict) else None
    return text if isinstance(text, str) else None


def is_exit_text(text: str | None) -> bool:
    """Whole-text ``<exit>…</exit>`` match; partial matches are ignored (§5.9)."""
    if not isinstance(text, str):
        return False
    stripped = text.strip()
    return stripped.startswith(EXIT_OPEN) and stripped.endswith(EXIT_CLOSE)


def final_response_payload(text: str | None) -> str | None:
    """Inner text of a ``<final_response>…</final_response>`` server message, else None."""
    if not isinstance(text, str):
        return None
    stripped = text.strip()
    if stripped.startswith(FINAL_OPEN) and stripped.endswith(FINAL_CLOSE):
        return stripped[len(FINAL_OPEN) : len(stripped) - len(FINAL_CLOSE)]
    return None


def is_action_applied(message: dict) -> bool:
    data = message_data(message)
    return (
        message_type(message) == "server-message"
        and isinstance(data, dict)
        and data.get("type") == ACTION_APPLIED
    )


def resets_inactivity(message: dict) -> bool:
    """Whether an inbound event is meaningful activity for the inactivity timer (§9.2)."""
    return message_type(message) in _ACTIVITY_TYPES


class TokenEntry(NamedTuple):
    """One completion's usage: counts (None when the response carried none) and their source."""

    prompt: int | None
    completion: int | None
    source: str


def token_entries(message: dict) -> list[TokenEntry]:
    """One ``TokenEntry`` per ``data.tokens`` entry of a metrics event.

    A missing count is 0 when the other is present (§10.1); an entry with neither is a call
    whose usage is unknown. ``source`` is what the bot stated (``server`` / ``estimate`` /
    ``unknown``), else ``server`` for a bot that reports counts without saying.
    """
    if message_type(message) != "metrics":
        return []
    data = message_data(message)
    tokens = data.get("tokens") if isinstance(data, dict) else None
    entries = []
    for entry in tokens if isinstance(tokens, list) else []:
        if not isinstance(entry, dict):
            continue
        value = entry.get("value") if isinstance(entry.get("value"), dict) else entry
        prompt, completion = _count(value.get("prompt_tokens")), _count(value.get("completion_tokens"))
        if prompt is None and completion is None:
            entries.append(TokenEntry(None, None, USAGE_UNKNOWN))
            continue
        stated = entry.get("source", value.get("source"))
        source = stated if stated in (USAGE_SERVER, USAGE_ESTIMATE) else USAGE_SERVER
        entries.append(TokenEntry(prompt or 0, completion or 0, source))
    return entries


def _count(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _iso_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")
