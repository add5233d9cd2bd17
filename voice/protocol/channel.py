"""One end of a bidirectional bridge <-> bot connection.

The in-process form (two asyncio queues) and the WebSocket form (protobuf frames) expose the
same interface, so the bridge, the bot host and the protocol tests do not care which is used.
Items are RTVI envelope dicts (harness.md §5.1) or ``AudioChunk``s.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol, Union


@dataclass(frozen=True)
class AudioChunk:
    """Raw PCM, signed 16-bit little-endian."""

    pcm: bytes
    sample_rate: int
    num_channels: int = 1


Item = Union[dict, AudioChunk]


class ConnectionClosed(Exception):
    """The other end went away (closed, crashed, protocol error)."""


class Channel(Protocol):
    """What both ends of a connection can do."""

    @property
    def closed(self) -> bool: ...

    async def send(self, item: Item) -> None:
        """Deliver one item; raises ConnectionClosed when the connection is gone."""

    async def recv(self) -> Item:
        """Next item from the other end; raises ConnectionClosed once it is gone."""

    async def close(self) -> None:
        """Close this end (idempotent); the other end's recv then raises ConnectionClosed."""


_CLOSE = object()


class QueueChannel:
    """In-process channel end; create pairs with ``channel_pair``."""

    def __init__(self, inbox: asyncio.Queue, outbox: asyncio.Queue) -> None:
        self._inbox = inbox
        self._outbox = outbox
        self._closed = False
        self._peer: QueueChannel | None = None

    @property
    def closed(self) -> bool:
        return self._closed

    async def send(self, item: Item) -> None:
        if self._closed or (self._peer is not None and self._peer._closed):
            raise ConnectionClosed("in-process channel closed")
        self._outbox.put_nowait(item)

    async def recv(self) -> Item:
        if self._closed:
            raise ConnectionClosed("in-process channel closed")
        item = await self._inbox.get()
        if item is _CLOSE:
            self._closed = True
            raise ConnectionClosed("peer closed the in-process channel")
        return item

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._outbox.put_nowait(_CLOSE)
        self._inbox.put_nowait(_CLOSE)


def channel_pair() -> tuple[QueueChannel, QueueChannel]:
    """Two connected in-process ends: (bridge side, bot side)."""
    a_to_b: asyncio.Queue = asyncio.Queue()
    b_to_a: asyncio.Queue = asyncio.Queue()
    bridge_side = QueueChannel(inbox=b_to_a, outbox=a_to_b)
    bot_side = QueueChannel(inbox=a_to_b, outbox=b_to_a)
    bridge_side._peer = bot_side
    bot_side._peer = bridge_side
    return bridge_side, bot_side
