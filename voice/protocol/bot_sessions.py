"""A bot server's client sessions: a fresh bot for each session, so no client ever sees the state
(prompt, tools, ``shared_state`` and its database) another client left behind.

The protocol makes a bot keep its state across reconnects (harness.md §2.2): one attempt opens a
*setup* connection (``reset``, ``update_system_prompt``, ``apply_initialization``), closes it, and
opens the *conversation* connection on the same state. So a session continues only from a
connection that did setup and nothing else, and only for ``SETUP_GRACE_SECS``; any other
connection (a conversation, the end-of-scenario pulls, a bare handshake, anything unexpected)
ends the session when it closes, and the next connection gets a new bot.
"""
from __future__ import annotations

import time
from typing import Callable, Generic, TypeVar

from voice.protocol import rtvi
from voice.protocol.channel import Channel, Item

SETUP_REQUESTS = frozenset({"reset", "update_system_prompt", "apply_initialization", "apply_sync_delta"})
HANDSHAKE = "client-ready"
SETUP_GRACE_SECS = 60.0
"""How long a finished setup waits for its conversation connection (the bridge pauses ~0.5 s)."""

HostT = TypeVar("HostT")


class ObservedChannel:
    """A ``Channel`` that notes what its client asked for (setup only, or anything else)."""

    def __init__(self, inner: Channel) -> None:
        self._inner = inner
        self.did_setup = False
        self.did_other = False

    @property
    def closed(self) -> bool:
        return self._inner.closed

    async def send(self, item: Item) -> None:
        await self._inner.send(item)

    async def recv(self) -> Item:
        item = await self._inner.recv()
        self._note(item)
        return item

    async def close(self) -> None:
        await self._inner.close()

    def _note(self, item: Item) -> None:
        kind = rtvi.message_type(item) if isinstance(item, dict) else None
        if kind == HANDSHAKE:
            return
        if kind == "client-message" and rtvi.request_parts(item)[0] in SETUP_REQUESTS:
            self.did_setup = True
        else:
            self.did_other = True


class ClientSessions(Generic[HostT]):
    """Which bot serves the next connection: the session's own after its setup, else a new one."""

    def __init__(self, new_host: Callable[[], HostT]) -> None:
        self._new_host = new_host
        self._host: HostT | None = None
        self._setup_done_at: float | None = None

    def host_for_connection(self) -> HostT:
        waiting = self._setup_done_at is not None and time.monotonic() - self._setup_done_at <= SETUP_GRACE_SECS
        if self._host is None or not waiting:
            self._host = self._new_host()
        self._setup_done_at = None
        return self._host

    def connection_closed(self, channel: ObservedChannel) -> None:
        """Keep the bot for the conversation after a setup-only connection; otherwise the session is over."""
        if channel.did_setup and not channel.did_other:
            self._setup_done_at = time.monotonic()
        else:
            self._host = None
            self._setup_done_at = None
