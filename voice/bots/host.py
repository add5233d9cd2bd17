"""The protocol host of a bot: the harness side of the wire protocol (harness.md §2.2, §5).

``BotHost`` owns what must survive reconnects (prompt, tools, ``shared_state``) and answers the
bridge on one connection at a time: handshake, the six request handlers, the kickoff, forwarded
utterances and inbound audio. What the bot *says* comes from its ``Brain``. A failing handler
yields an ``error-response`` (or its documented failure value); it never ends the connection.
"""
from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any, Awaitable, Callable, Mapping

from voice.bots.brain import Brain, BrainConfig
from voice.protocol import rtvi
from voice.protocol.channel import AudioChunk, Channel, ConnectionClosed, Item

logger = logging.getLogger(__name__)

DbHasher = Callable[[Any], str]
InitFunction = Callable[[dict, dict], Any]
"""An initialization function: ``fn(db, arguments)`` mutating ``db`` in place (§5.5 step 3)."""

RTVI_KEY = "__rtvi"
TOOL_DOMAIN_KEY = "__tool_domain"
HASHER_SETTING = "EVASITE_DB_HASHER"


class RtviHandle:
    """What tools find under ``shared_state["__rtvi"]``: pushes server messages through whatever
    connection the host currently serves (dropped when none is up)."""

    def __init__(self, host: "BotHost") -> None:
        self._host = host

    async def push_server_message(self, data: dict) -> None:
        await self._host.emit(rtvi.server_message(data))

    async def emit(self, item: Item) -> None:
        await self._host.emit(item)


class _Connection:
    """One served connection; sends never raise (a dead peer just drops output)."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    async def send(self, item: Item) -> None:
        if self.channel.closed:
            return
        try:
            await self.channel.send(item)
        except ConnectionClosed:
            pass


class BotHost:
    """Serves the harness protocol for one bot on successive connections."""

    def __init__(
        self,
        brain: Brain,
        *,
        db_hasher: DbHasher | None = None,
        init_functions: Mapping[str, InitFunction] | None = None,
        prompt_suffix: str = "",
    ) -> None:
        self.brain = brain
        self.shared_state: dict = {}
        self.prompt = ""
        self.tools: dict[str, dict] = {}
        self.tool_domain = "default"
        self._db_hasher = db_hasher
        self._init_functions = dict(init_functions or {})
        self._prompt_suffix = prompt_suffix
        self._rtvi = RtviHandle(self)
        self._current: _Connection | None = None
        self._serve_lock = asyncio.Lock()
        self._handlers: dict[str, Callable[[dict], Awaitable[Any]]] = {
            "reset": self._reset,
            "update_system_prompt": self._update_system_prompt,
            "apply_initialization": self._apply_initialization,
            "get_context_history": self._get_context_history,
            "get_scenario_summary": self._get_scenario_summary,
            "apply_sync_delta": self._apply_sync_delta,
        }

    # --- connection lifecycle ------------------------------------------------------------------

    async def serve(self, channel: Channel) -> None:
        """Handle one connection until it closes; connections are served one at a time."""
        async with self._serve_lock:
            connection = _Connection(channel)
            self._current = connection
            requests: asyncio.Queue = asyncio.Queue()
            worker = asyncio.create_task(self._request_worker(connection, requests))
            try:
                await self._guard("brain.start", self.brain.start(self.emit))
                while True:
                    item = await channel.recv()
                    await self._dispatch(connection, requests, item)
            except ConnectionClosed:
                pass
            finally:
                worker.cancel()
                await asyncio.gather(worker, return_exceptions=True)
                if self._current is connection:
                    self._current = None
                await self._guard("brain.stop", self.brain.stop())
                await channel.close()

    async def emit(self, item: Item) -> None:
        """Send an event or audio to the bridge on the current connection (dropped if none)."""
        connection = self._current
        if connection is not None:
            await connection.send(item)

    async def drop_connection(self) -> None:
        """Close the current connection abruptly (used by the protocol double's misbehaviour)."""
        connection = self._current
        if connection is not None:
            await connection.channel.close()

    async def _dispatch(self, connection: _Connection, requests: asyncio.Queue, item: Item) -> None:
        if isinstance(item, AudioChunk):
            await self._guard("brain.handle_audio", self.brain.handle_audio(item))
            return
        kind = rtvi.message_type(item)
        if kind == "client-ready":
            await connection.send(rtvi.bot_ready(getattr(self.brain, "modality", None)))
        elif kind == "client-message":
            requests.put_nowait(item)  # handled in order by the worker; reading never blocks
        elif kind == "send-text":
            content = _field(item, "content")
            await self._guard("brain.handle_text", self.brain.handle_text(content, kind="kickoff"))
        elif kind == "utterance":
            text = _field(item, "text")
            await self._guard("brain.handle_text", self.brain.handle_text(text, kind="utterance"))
        else:
            logger.debug("ignoring inbound %s", kind)

    async def _request_worker(self, connection: _Connection, requests: asyncio.Queue) -> None:
        while True:
            message = await requests.get()
            await connection.send(await self.answer(message))

    async def answer(self, message: dict) -> dict:
        """The response envelope for one client-message request."""
        name, args = rtvi.request_parts(message)
        id_ = message.get("id")
        handler = self._handlers.get(name)
        if handler is None:
            return rtvi.error_response(id_, f"ValueError: unknown client message {name!r}")
        try:
            return rtvi.server_response(id_, name, await handler(args))
        except Exception as exc:
            logger.exception("handler %s failed", name)
            return rtvi.error_response(id_, rtvi.error_text(exc))

    @staticmethod
    async def _guard(what: str, awaitable: Awaitable[Any]) -> None:
        try:
            await awaitable
        except Exception:
            logger.exception("%s failed", what)

    # --- the six handlers (§5.3-§5.7) ------------------------------------------------------------

    async def _reset(self, args: dict) -> bool:
        try:
            await self.brain.reset()
            return True
        except Exception:
            logger.exception("reset failed")
            return False

    async def _update_system_prompt(self, args: dict) -> bool:
        prompt = args.get("prompt") or ""
        if not isinstance(prompt, str) or not prompt.strip():
            return False
        try:
            if args.get("add_suffix", True) and self._prompt_suffix:
                prompt = f"{prompt}\n{self._prompt_suffix}"
            tool_domain = str(args.get("tool_domain") or "default")
            tools = _parse_tools(args.get("tools"))
            self.shared_state.clear()  # in place: tools built earlier hold this very dict
            self.shared_state[RTVI_KEY] = self._rtvi
            self.shared_state[TOOL_DOMAIN_KEY] = tool_domain
            self.prompt, self.tools, self.tool_domain = prompt, tools, tool_domain
            # The brain replaces its context and tools and resets its speech services (steps 3, 5, 6).
            await self.brain.configure(
                BrainConfig(prompt=prompt, tools=tools, tool_domain=tool_domain, shared_state=self.shared_state)
            )
            return True
        except Exception:
            logger.exception("update_system_prompt failed")
            return False

    async def _apply_initialization(self, args: dict) -> dict:
        try:
            raw = args.get("shared_state_init", "{}")
            try:
                init = json.loads(raw) if isinstance(raw, str) else raw
            except ValueError as exc:
                return {"success": False, "errors": [f"shared_state_init is not valid JSON: {exc}"]}
            if not isinstance(init, dict):
                return {"success": False, "errors": ["shared_state_init must decode to a JSON object"]}
            self.shared_state.update(init)
            error = _resolve_db_path(self.shared_state)
            if error:
                return {"success": False, "errors": [error]}
            errors = self._run_init_actions(args.get("actions") or [])
            return {"success": not errors, "errors": errors}
        except Exception as exc:
            return {"success": False, "errors": [rtvi.error_text(exc)]}

    def _run_init_actions(self, actions: list) -> list[str]:
        if not actions:
            return []
        db = self.shared_state.get("db")
        if not isinstance(db, dict):
            return ["initialization actions given but shared_state has no db"]
        errors = []
        for record in actions:
            record = record if isinstance(record, dict) else {}
            name = str(record.get("func_name") or record.get("name") or "")
            arguments = record.get("arguments") or record.get("args") or {}
            function = self._init_functions.get(name)
            if function is None:
                errors.append(f"KeyError: unknown initialization function {name!r}")
                continue
            try:
                function(db, arguments)
            except Exception as exc:
                errors.append(rtvi.error_text(exc))
        return errors

    async def _get_context_history(self, args: dict) -> dict:
        try:
            messages = await self.brain.context_history()
            return {"context": json.dumps(_strip_media(messages), default=str)}
        except Exception:
            logger.exception("get_context_history failed")
            return {"context": "[]"}

    async def _get_scenario_summary(self, args: dict) -> dict:
        try:
            actions = self.shared_state.get("actions") or []
            db = self.shared_state.get("db")
            hasher = self._hasher()
            summary: dict[str, Any] = {
                "actions": list(actions),
                "db_hash": hasher(db) if db and hasher is not None else None,
            }
            if args.get("include_db", False):
                summary["db"] = db
            return summary
        except Exception:
            logger.exception("get_scenario_summary failed")
            return {"actions": [], "db_hash": None}

    async def _apply_sync_delta(self, args: dict) -> dict:
        return {"success": True, "errors": []}  # single-side domains never sync (§4)

    def _hasher(self) -> DbHasher | None:
        if self._db_hasher is None:
            self._db_hasher = _hasher_from_settings()
        return self._db_hasher


def _field(message: dict, key: str) -> str:
    data = rtvi.message_data(message)
    return str(data.get(key, "")) if isinstance(data, dict) else ""


def _parse_tools(raw: Any) -> dict[str, dict]:
    """The tool map from its JSON string form (a dict is accepted too)."""
    if raw in (None, ""):
        return {}
    tools = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(tools, dict):
        raise ValueError("tools must be a JSON object mapping tool name to kwargs")
    return {str(name): dict(kwargs or {}) for name, kwargs in tools.items()}


def _resolve_db_path(state: dict) -> str | None:
    """Load ``db_path`` (relative to the evaluation data root) into ``db`` (§5.5 step 2)."""
    if "db_path" not in state:
        return None
    db_path = state.pop("db_path")
    if "db" in state:
        return None
    from scenarios.data_root import get_eval_data_root

    path = confined_path(get_eval_data_root(), str(db_path))
    if path is None:
        # A peer may not read arbitrary files back through include_db.
        return f"db_path {db_path!r} must be a relative path inside the evaluation data root"
    try:
        state["db"] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"cannot load db_path {db_path}: {exc}"
    return None


def confined_path(root: Path, relative: str) -> Path | None:
    """``root / relative`` resolved, or None when ``relative`` is absolute or escapes ``root``
    (``..``, a symlink pointing out)."""
    candidate = Path(relative)
    if not relative or candidate.is_absolute() or candidate.drive:
        return None
    base = root.resolve()
    resolved = (base / candidate).resolve()
    return resolved if resolved.is_relative_to(base) else None


def _hasher_from_settings() -> DbHasher | None:
    try:
        from django.conf import settings
        from django.utils.module_loading import import_string

        if not settings.configured:
            return None
        dotted = getattr(settings, HASHER_SETTING, None)
        return import_string(dotted) if dotted else None
    except Exception:
        logger.exception("cannot load %s", HASHER_SETTING)
        return None


_MEDIA_CONTAINERS = {
    "input_audio": "<audio>", "audio": "<audio>", "image": "<image>", "image_url": "<image>",
    "file": "<file>", "inline_data": "<binary>",
}
"""Keys whose object holds inline media (OpenAI and Gemini message shapes); an object with
``"type": "base64"`` (Anthropic's ``source``) is one too."""
_BASE64_FIELDS = frozenset({"data", "file_data", "b64_json"})
"""Leaf fields of a media container that carry the media itself as base64 text."""


def _strip_media(value: Any, container: str | None = None) -> Any:
    """Replace inline binary media with placeholder tags; keep text and tool traffic (§5.6).

    ``container`` is the key the value sits under: inside a media container (e.g.
    ``input_audio``) the base64 leaf fields are replaced too, not only bytes and ``data:`` URIs.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "<binary>"
    if isinstance(value, str) and value.startswith("data:"):
        return _tag_for_mime(value[len("data:"):], "<file>")
    if isinstance(value, dict):
        tag = None
        if container in _MEDIA_CONTAINERS or value.get("type") == "base64":
            declared = value.get("mime_type") or value.get("media_type") or value.get("mimeType")
            tag = _tag_for_mime(declared, _MEDIA_CONTAINERS.get(container or "", "<binary>"))
        return {
            key: tag if tag and key in _BASE64_FIELDS and isinstance(item, str) else _strip_media(item, key)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_strip_media(item) for item in value]
    return value


def _tag_for_mime(mime: Any, default: str) -> str:
    for kind in ("audio", "image"):
        if isinstance(mime, str) and mime.startswith(f"{kind}/"):
            return f"<{kind}>"
    return default
