"""Where the bridge finds a peer: a bot hosted in this process or one behind a WebSocket URL.

Both hand back a ``Channel``; the bridge never needs to know which it got (architecture.md,
"Peers"). Conversation connections ask for no ping timeout (§2.2).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from voice.bots.brain import STOP_BUDGET_SECS
from voice.bots.host import BotHost
from voice.protocol.channel import Channel, Item, QueueChannel, channel_pair
from voice.protocol.websocket import PING_TIMEOUT, connect_websocket

logger = logging.getLogger(__name__)

HOST_STOP_GRACE = STOP_BUDGET_SECS + 1.0
"""How long a closed in-process connection's host task may take to wind down before cancel:
the brain's own stop budget plus a little for the host's bookkeeping."""


class PeerEndpoint(Protocol):
    label: str
    in_process: bool

    async def connect(self, *, conversation: bool = False) -> Channel:
        """Open a fresh connection; ``conversation`` disables the keep-alive ping timeout."""


class _HostedChannel:
    """The bridge end of an in-process pair; closing it also winds down the host's task."""

    def __init__(self, inner: QueueChannel, task: asyncio.Task) -> None:
        self._inner = inner
        self._task = task

    @property
    def closed(self) -> bool:
        return self._inner.closed

    async def send(self, item: Item) -> None:
        await self._inner.send(item)

    async def recv(self) -> Item:
        return await self._inner.recv()

    async def close(self) -> None:
        await self._inner.close()
        if not self._task.done():
            done, _ = await asyncio.wait({self._task}, timeout=HOST_STOP_GRACE)
            if not done:
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)


class InProcessEndpoint:
    """A ``BotHost`` served in this event loop over an in-memory channel pair."""

    in_process = True

    def __init__(self, host: BotHost, *, label: str = "in-process") -> None:
        self.host = host
        self.label = label
        self._tasks: set[asyncio.Task] = set()  # strong refs: the loop only keeps weak ones

    async def connect(self, *, conversation: bool = False) -> Channel:
        bridge_side, bot_side = channel_pair()
        task = asyncio.create_task(self._serve(bot_side))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return _HostedChannel(bridge_side, task)

    async def _serve(self, bot_side: QueueChannel) -> None:
        try:
            await self.host.serve(bot_side)
        except Exception:
            logger.exception("in-process bot %s crashed", self.label)
        finally:
            # A crashed host must look like a lost peer to the bridge, never like silence.
            await bot_side.close()

    async def aclose(self) -> None:
        """Cancel every host task still running (end of a session or test)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


class WebSocketEndpoint:
    """A bot server reachable at ``ws://…`` (external agents, ``run_bot`` processes)."""

    in_process = False

    def __init__(self, url: str, *, label: str | None = None, attempts: int = 5,
                 backoff: tuple[float, ...] = (1, 2, 4, 8)) -> None:
        self.url = url
        self.label = label or url
        self._attempts = attempts
        self._backoff = backoff

    async def connect(self, *, conversation: bool = False) -> Channel:
        return await connect_websocket(
            self.url,
            attempts=self._attempts,
            backoff=self._backoff,
            keepalive_timeout=None if conversation else PING_TIMEOUT,
        )

