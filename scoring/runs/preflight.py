"""Reachability checks before the first scenario of a run (issue: unreachable endpoints).

Why: an unreachable bot or model endpoint otherwise shows up as a setup traceback, or as every
scenario idling into the inactivity timeout and a 0% run that never names the URL. Each check
tries one cheap thing (a WebSocket connect and handshake, ``GET /models``, a one-token request)
and fails with one line naming the flag, the URL, what was tried and what came back.
"""
from __future__ import annotations

import asyncio
import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from scoring.core.http_only import http_only_opener
from scoring.runs.endpoint_urls import BOT_SCHEMES, LLM_SCHEMES, url_problem, url_shape_problem
from scoring.runs.options import RunOptions, redact_urls_in

HTTP_TIMEOUT = 10.0
MAX_ANSWER_BYTES = 1024 * 1024
EVA_PREFIX = "eva_airline__"
HANDSHAKE_TIMEOUT = 5.0


class PreflightError(RuntimeError):
    """A run cannot start: the message is the one line an operator needs."""


async def check_run_endpoints(options: RunOptions) -> None:
    """Data root (when no eva_airline scenario could be registered), URL shapes, bot URLs, LLM URLs."""
    check_data_root(options)
    problem = url_shape_problem(options)  # before anything is contacted: no file://, no key in a URL
    if problem:
        raise PreflightError(redact_urls_in(problem))
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
    problem = url_problem(url, BOT_SCHEMES, None)
    if problem:
        raise PreflightError(f"{flag}: {problem}")
    try:
        channel = await connect_websocket(url, attempts=1)
    except ConnectionError as exc:
        raise PreflightError(f"{flag}: cannot reach the {side} bot ({_reason(exc)}); "
                             "tried one WebSocket connection") from None
    try:
        reply = await handshake_reply(channel, HANDSHAKE_TIMEOUT)
    except ConnectionClosed:
        raise PreflightError(f"{flag}: the {side} bot closed the connection during the client-ready handshake") from None
    except Exception as exc:  # whatever a hostile bot makes of the handshake, one line
        raise PreflightError(f"{flag}: the client-ready handshake failed ({_reason(exc)})") from None
    finally:
        await channel.close()
    mismatch = modality_mismatch(side, redact_urls_in(url), rtvi.stated_modality(reply), modality)
    if mismatch:
        raise PreflightError(f"{flag}: {mismatch}")


def check_llm_url(side: str, url: str, model: str, api_key_name: str | None) -> None:
    """``GET <url>/models``; on 404 a one-token chat completion. 401/403, 404, redirects,
    answers that are not JSON and connections that fail each get their own wording."""
    from voice.bots.factory import api_key_for

    flag = f"--{side}-llm-url {redact_urls_in(url)}"
    problem = url_problem(url, LLM_SCHEMES, f"{side}_api_key_name")
    if problem:
        raise PreflightError(f"{flag}: {problem}")
    try:
        key = api_key_for(url, api_key_name)
    except ValueError as exc:
        raise PreflightError(f"{flag}: {redact_urls_in(str(exc))}") from None
    status = _http_status(flag, _below(url, "models"), key, None)
    if status == 200:
        return
    if status in (401, 403):
        where = f"set {api_key_name} to a valid key" if api_key_name else f"pass --{side}-api-key-name"
        raise PreflightError(f"{flag}: the server refused the API key (HTTP {status} for GET /models); {where}")
    probe = {"model": model, "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}
    second = _http_status(flag, _below(url, "chat/completions"), key, probe)
    if second == 200:
        return
    if second in (401, 403):
        raise PreflightError(f"{flag}: the server refused the API key (HTTP {second} for POST /chat/completions)")
    if status == 404 and second == 404:
        raise PreflightError(f"{flag}: no OpenAI-compatible API there (HTTP 404 for GET /models and "
                             "POST /chat/completions; the URL usually ends in /v1)")
    raise PreflightError(f"{flag}: HTTP {status} for GET /models and HTTP {second} for a one-token "
                         f"POST /chat/completions (model {model!r})")


def _below(url: str, leaf: str) -> str:
    """``leaf`` under the base URL's path (any fragment dropped)."""
    parts = urlsplit(url.strip())
    return urlunsplit((parts.scheme, parts.netloc, f"{parts.path.rstrip('/')}/{leaf}", parts.query, ""))


def _http_status(flag: str, url: str, key: str, body: dict[str, Any] | None) -> int:
    """The status of one request; a 200 must carry JSON (read within ``HTTP_TIMEOUT`` in all)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method="POST" if data else "GET",
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    what = f"{request.get_method()} {url.rsplit('/', 1)[-1]}"
    deadline = time.monotonic() + HTTP_TIMEOUT
    try:
        with http_only_opener().open(request, timeout=HTTP_TIMEOUT) as response:
            status = int(response.status)
            answer = _read_until(response, deadline)
    except urllib.error.HTTPError as exc:
        status = int(exc.code)
        exc.close()
        if 300 <= status < 400:
            raise PreflightError(f"{flag}: HTTP {status} (a redirect) for {what}; redirects are not followed, "
                                 "give the URL they lead to") from None
        return status
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
        raise PreflightError(f"{flag}: cannot reach the server ({_reason(exc)}); tried {what}") from None
    except Exception as exc:  # anything else a hostile server provokes is still one line
        raise PreflightError(f"{flag}: unusable answer to {what} ({_reason(exc)})") from None
    if status == 200:
        try:
            json.loads(answer)
        except ValueError:
            raise PreflightError(f"{flag}: HTTP 200 for {what} but the answer is not JSON "
                                 "(not an OpenAI-compatible API?)") from None
    return status


def _read_until(response: Any, deadline: float) -> bytes:
    """The body, at most ``MAX_ANSWER_BYTES``, read before ``deadline`` (a server that drips
    bytes cannot hold the preflight)."""
    chunks: list[bytes] = []
    size = 0
    while size < MAX_ANSWER_BYTES:
        if time.monotonic() > deadline:
            raise TimeoutError("the answer took too long")
        chunk = response.read1(min(65536, MAX_ANSWER_BYTES - size)) if hasattr(response, "read1") else response.read(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


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
    if isinstance(exc, http.client.HTTPException):
        return "the answer is not HTTP"
    text = " ".join(str(exc).split())  # one line, whatever the other end put in its answer
    return text[:200] if text else type(exc).__name__
