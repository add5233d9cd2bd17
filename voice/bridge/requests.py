"""Bridge-side request/response over a channel it is the only reader of (setup and pulls).

Responses can interleave with events and with other responses (§5.1): everything that is not
the awaited message is skipped.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable

from voice.protocol import rtvi
from voice.protocol.channel import Channel, ConnectionClosed, Item


class RequestError(Exception):
    """The bot answered with an ``error-response``."""


async def wait_for(channel: Channel, match: Callable[[Item], bool], timeout: float) -> Item:
    """The first inbound item satisfying ``match``; ``TimeoutError`` / ``ConnectionClosed``."""
    async with asyncio.timeout(timeout):
        return await _first_match(channel, match)


async def _first_match(channel: Channel, match: Callable[[Item], bool]) -> Item:
    while True:
        item = await channel.recv()
        if match(item):
            return item


async def handshake(channel: Channel, timeout: float) -> bool:
    """``client-ready`` -> ``bot-ready``; False on timeout (the caller only warns, §3.2)."""
    return await handshake_reply(channel, timeout) is not None


async def handshake_reply(channel: Channel, timeout: float) -> dict | None:
    """``client-ready`` -> the ``bot-ready`` message itself, or None on timeout.

    The send is inside the deadline too: a peer that stops reading makes it wait without limit.
    """
    try:
        async with asyncio.timeout(timeout):
            await channel.send(rtvi.client_ready())
            reply = await _first_match(channel, lambda item: isinstance(item, dict) and rtvi.message_type(item) == "bot-ready")
        return reply if isinstance(reply, dict) else None
    except TimeoutError:
        return None


async def request(channel: Channel, name: str, args: dict | None, *, side: str, timeout: float) -> Any:
    """Send one client-message and return its response ``d``, matched by id.

    ``timeout`` bounds the send and the wait together (a send waits for room in the peer's
    socket buffer, without limit if the peer stopped reading). Raises ``RequestError``
    (error-response), ``TimeoutError`` or ``ConnectionClosed``.
    """
    message = rtvi.client_message(name, args, side=side)
    id_ = message["id"]

    def answers(item: Item) -> bool:
        return (
            isinstance(item, dict)
            and item.get("id") == id_
            and rtvi.message_type(item) in ("server-response", "error-response")
        )

    try:
        async with asyncio.timeout(timeout):
            await channel.send(message)
            response = await _first_match(channel, answers)
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
    except Exception as exc:  # error-response, timeout, lost peer, or a broken channel
        log(f"{side}: {name} failed: {type(exc).__name__}: {exc}")
        return None


__all__ = ["RequestError", "handshake", "handshake_reply", "request", "request_or_none", "wait_for", "ConnectionClosed"]
