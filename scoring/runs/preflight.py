"""Reachability checks before the first scenario of a run (issue: unreachable endpoints).

Why: an unreachable bot or model endpoint otherwise shows up as a setup traceback, or as every
scenario idling into the inactivity timeout and a 0% run that never names the URL. Each check
tries one cheap thing (a WebSocket connect and handshake, ``GET /models``, a one-token request)
and fails with one line naming the flag, the URL, what was tried and what came back.
"""
from __future__ import annotations

import asyncio
import json
import socket
import urllib.error
import urllib.request
from typing import Any

from scoring.runs.options import RunOptions, redact_urls_in

HTTP_TIMEOUT = 10.0
EVA_PREFIX = "eva_airline__"
HANDSHAKE_TIMEOUT = 5.0


class PreflightError(RuntimeError):
    """A run cannot start: the message is the one line an operator needs."""


async def check_run_endpoints(options: RunOptions) -> None:
    """Data root (when no eva_airline scenario could be registered), bot URLs, LLM URLs."""
    check_data_root(options)
    for side, url in (("agent", options.agent_url), ("user", options.user_url)):
        if url:
            await check_bot_url(side, url, options.modality)
    for side, url, model, key_name in (
        ("agent", options.agent_llm_url, options.agent_model, options.agent_api_key_name),
        ("user", options.user_llm_url, options.user_model, options.user_api_key_name),
    ):
        if url:
            await asyncio.to_thread(check_llm_url, side, url, model, key_name)


def check_data_root(options: RunOptions) -> None:
    """``EVAL_DATA_ROOT`` problems as one line when the run needs eva_airline data
    (``manage.py check`` would name them, but --skip-checks skips it)."""
    from scenarios.data_root import data_root_problems

    if options.scenarios and not any(name.startswith(EVA_PREFIX) for name in options.scenarios):
        return
    if not options.scenarios and options.domain and options.domain != EVA_PREFIX.rstrip("_"):
        return
    problems = data_root_problems()
    if problems:
        raise PreflightError(f"EVAL_DATA_ROOT: {'; '.join(problems)}")


async def check_bot_url(side: str, url: str, modality: str) -> None:
    """One WebSocket connect and ``client-ready`` handshake; the bot's stated modality must match."""
    from voice.bridge.requests import handshake_reply
    from voice.bridge.setup import modality_mismatch
    from voice.protocol import rtvi
    from voice.protocol.channel import ConnectionClosed
    from voice.protocol.websocket import connect_websocket

    flag = f"--{side}-url {redact_urls_in(url)}"
    try:
        channel = await connect_websocket(url, attempts=1)
    except ConnectionError as exc:
        raise PreflightError(f"{flag}: cannot reach the {side} bot ({_reason(exc)}); "
                             "tried one WebSocket connection") from None
    try:
        reply = await handshake_reply(channel, HANDSHAKE_TIMEOUT)
    except ConnectionClosed:
        raise PreflightError(f"{flag}: the {side} bot closed the connection during the client-ready handshake") from None
    finally:
        await channel.close()
    mismatch = modality_mismatch(side, redact_urls_in(url), rtvi.stated_modality(reply), modality)
    if mismatch:
        raise PreflightError(f"{flag}: {mismatch}")


def check_llm_url(side: str, url: str, model: str, api_key_name: str | None) -> None:
    """``GET <url>/models``; on 404 a one-token chat completion. 401/403, 404 and refused
    connections each get their own wording."""
    from voice.bots.factory import api_key_for

    flag = f"--{side}-llm-url {redact_urls_in(url)}"
    try:
        key = api_key_for(url, api_key_name)
    except ValueError as exc:
        raise PreflightError(f"{flag}: {exc}") from None
    base = url.rstrip("/")
    status = _http_status(flag, f"{base}/models", key, None)
    if status == 200:
        return
    if status in (401, 403):
        where = f"set {api_key_name} to a valid key" if api_key_name else f"pass --{side}-api-key-name"
        raise PreflightError(f"{flag}: the server refused the API key (HTTP {status} for GET /models); {where}")
    probe = {"model": model, "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}
    second = _http_status(flag, f"{base}/chat/completions", key, probe)
    if second == 200:
        return
    if second in (401, 403):
        raise PreflightError(f"{flag}: the server refused the API key (HTTP {second} for POST /chat/completions)")
    if status == 404 and second == 404:
        raise PreflightError(f"{flag}: no OpenAI-compatible API there (HTTP 404 for GET /models and "
                             "POST /chat/completions; the URL usually ends in /v1)")
    raise PreflightError(f"{flag}: HTTP {status} for GET /models and HTTP {second} for a one-token "
                         f"POST /chat/completions (model {model!r})")


def _http_status(flag: str, url: str, key: str, body: dict[str, Any] | None) -> int:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method="POST" if data else "GET",
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    what = f"{request.get_method()} {url.rsplit('/', 1)[-1]}"
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError) as exc:
        raise PreflightError(f"{flag}: cannot reach the server ({_reason(exc)}); tried {what}") from None


def _reason(exc: BaseException) -> str:
    """A few words for why a connection failed (the innermost cause decides)."""
    while True:
        inner = getattr(exc, "reason", None) if isinstance(exc, urllib.error.URLError) else exc.__cause__
        if not isinstance(inner, BaseException):
            break
        exc = inner
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return "unknown host"
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return "timed out"
    text = str(exc)
    return text[:200] if text else type(exc).__name__
