"""The call page's control messages (start, offer, say, hangup), checked before anything acts on them.

The browser is outside input: ``parse_control`` never raises and answers every bad message with
the reason, which the consumer sends back as an ``error`` event (the call itself is unaffected).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import urlparse

from voice.modality import MODALITIES

MAX_CONTROL_CHARS = 64_000
"""One message's bound: an SDP offer is the longest (a few kB for a browser's audio-only offer)."""
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
AGENT_KEYS = ("model", "llm_url", "api_key_name", "url")


@dataclass(frozen=True)
class Control:
    type: str
    modality: str = ""
    text: str = ""
    agent: dict[str, str] = field(default_factory=dict)
    sdp: str = ""


def _url(value: str, schemes: tuple[str, ...], what: str) -> str | None:
    parsed = urlparse(value)
    if parsed.scheme not in schemes or not parsed.netloc:
        return f"{what} must be a {' or '.join(s + '://' for s in schemes)} URL"
    return None


def check_agent(agent: Any) -> tuple[dict[str, str], str | None]:
    """The agent choice with empty fields dropped, or the reason it is refused."""
    if agent is None:
        agent = {}
    if not isinstance(agent, dict):
        return {}, "agent must be an object"
    unknown = set(agent) - set(AGENT_KEYS)
    if unknown:
        return {}, f"unknown agent fields: {', '.join(sorted(unknown))}"
    choice: dict[str, str] = {}
    for key in AGENT_KEYS:
        value = agent.get(key)
        if value is None or value == "":
            continue
        if not isinstance(value, str) or len(value) > 500:
            return {}, f"agent {key} must be a string of at most 500 characters"
        choice[key] = value.strip()
    if "url" in choice:
        problem = _url(choice["url"], ("ws", "wss"), "the agent URL")
        if problem:
            return {}, problem
        return {"url": choice["url"]}, None
    if "llm_url" in choice:
        problem = _url(choice["llm_url"], ("http", "https"), "the agent LLM URL")
        if problem:
            return {}, problem
        if not choice.get("model"):
            return {}, "an LLM URL needs a model name"
    if "api_key_name" in choice and not _ENV_NAME.match(choice["api_key_name"]):
        return {}, "the API key name must be an environment variable name (the key itself never leaves the server)"
    return choice, None


def _start(message: dict) -> Control | str:
    modality = message.get("modality", "voice")
    if modality not in MODALITIES:
        return f"modality must be one of {', '.join(MODALITIES)}"
    agent, problem = check_agent(message.get("agent"))
    if problem:
        return problem
    return Control("start", modality=modality, agent=agent)


def _offer(message: dict) -> Control | str:
    sdp = message.get("sdp")
    if not isinstance(sdp, str) or not sdp.strip():
        return "an offer carries its SDP as a non-empty string"
    return Control("offer", sdp=sdp)


def _say(message: dict) -> Control | str:
    text = message.get("text")
    if not isinstance(text, str):
        return "text must be a string"
    return Control("say", text=text)


def _hangup(message: dict) -> Control | str:
    return Control("hangup")


_PARSERS: dict[str, Callable[[dict], Control | str]] = {"start": _start, "offer": _offer, "say": _say,
                                                         "hangup": _hangup}


def parse_control(raw: Any) -> Control | str:
    """One WebSocket text frame as a ``Control``, or why it is not one."""
    if not isinstance(raw, str):
        return "control messages are JSON text"
    if len(raw) > MAX_CONTROL_CHARS:
        return f"control message longer than {MAX_CONTROL_CHARS} characters"
    try:
        message = json.loads(raw)
    except ValueError:
        return "control message is not valid JSON"
    if not isinstance(message, dict):
        return "control message must be a JSON object"
    kind = message.get("type")
    parser = _PARSERS.get(kind) if isinstance(kind, str) else None
    if parser is None:
        return f"unknown control message type; expected one of {', '.join(_PARSERS)}"
    return parser(message)
