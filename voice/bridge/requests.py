"""Bridge-side request/response over a channel it is the only reader of (setup and pulls).

Responses can interleave with events and with other responses (§5.1): everything that is not
the awaited message is skipped.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

from voice.protocol import rtvi
from voice.protocol.channel import Channel, ConnectionClosed, Item


class RequestError(Exception):
    """The bot answered with an ``error-response``."""


async def wait_for(channel: Channel, match: Callable[[Item], bool], timeout: float) -> Item:
    """The first inbound item satisfying ``match``; ``TimeoutError`` / ``ConnectionClosed``."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no matching message")
        item = await asyncio.wait_for(channel.recv(), remaining)
        if match(item):
            return item


async def handshake(channel: Channel, timeout: float) -> bool:
    """``client-ready`` -> ``bot-ready``; False on timeout (the caller only warns, §3.2)."""
    await channel.send(rtvi.client_ready())
    try:
        await wait_for(channel, lambda item: isinstance(item, dict) and rtvi.message_type(item) == "bot-ready", timeout)
        return True
    except TimeoutError:
        return False


async def request(channel: Channel, name: str, args: dict | None, *, side: str, timeout: float) -> Any:
    """Send one client-message and return its response ``d``, matched by id.

    Raises ``RequestError`` (error-response), ``TimeoutError`` or ``ConnectionClosed``.
    """
    message = rtvi.client_message(name, args, side=side)
    await channel.send(message)
    id_ = message["id"]

    def answers(item: Item) -> bool:
        return (
            isinstance(item, dict)
            and item.get("id") == id_
            and rtvi.message_type(item) in ("server-response", "error-response")
        )

    try:
        response = await wait_for(channel, answers, timeout)
    except TimeoutError as exc:  # asyncio.TimeoutError is the builtin on 3.11
        raise TimeoutError(f"{name} timed out after {timeout} s") from exc
    data = rtvi.message_data(response)
    if rtvi.message_type(response) == "error-response":
        raise RequestError(str(data.get("error") if isinstance(data, dict) else data))
    return data.get("d") if isinstance(data, dict) else None


async def request_or_none(channel: Channel, name: str, args: dict | None, *, side: str, timeout: float,
                          log: Callable[[str], None]) -> Any:
    """``request`` for the end-of-scenario pulls: any failure yields None, never an exception."""
    try:
        return await request(channel, name, args, side=side, timeout=timeout)
    except (RequestError, TimeoutError, ConnectionClosed) as exc:
        log(f"{side}: {name} failed: {type(exc).__name__}: {exc}")
        return None


__all__ = ["RequestError", "handshake", "request", "request_or_none", "wait_for", "ConnectionClosed"]
