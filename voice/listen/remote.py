"""Listening in across processes over the Redis channel layer, for calls that run in a shell
``run_eval`` or a Celery worker while the browser talks to daphne.

The call's process joins a group named after its (run id, scenario) key and streams nothing
until a server asks: a ``listen.join`` carrying the server's reply channel starts a feed that
sends that listener's mix (48 kHz, 60 ms per message) until the call ends, the server says
``listen.leave``, or its keep-alives stop. Sends that find the channel full are dropped, and the
feed runs as its own task, so a slow Redis never reaches the relay. With the in-memory channel
layer (one process) none of this runs."""
from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from typing import Any

import numpy as np
from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer, get_channel_layer

from voice.audio.pcm import samples
from voice.listen.mixer import FRAME_SAMPLES, ListenerMix

FRAMES_PER_MESSAGE = 3
MESSAGE_SECONDS = FRAMES_PER_MESSAGE * FRAME_SAMPLES / 48_000
JOIN_TIMEOUT_S = 1.5
KEEPALIVE_S = 2.0
KEEPALIVE_TIMEOUT_S = 3 * KEEPALIVE_S
SILENT_SOURCE_TIMEOUT_S = 5.0
"""A feed that sent nothing for this long belongs to a process that is gone."""
REMOTE_PRIME_FRAMES = 6
"""Messages arrive in 60 ms bursts with network jitter: start playing with 120 ms queued."""

log = logging.getLogger(__name__)
_tasks: set[asyncio.Task] = set()


def relay_layer() -> Any:
    """The channel layer when it crosses processes (Redis), else None."""
    try:
        layer = get_channel_layer()
    except Exception:  # a misconfigured layer must not break the call or the endpoint
        return None
    return None if layer is None or isinstance(layer, InMemoryChannelLayer) else layer


def group_name(key: tuple[int, str]) -> str:
    """A valid group name for any scenario directory name (channels allows [a-zA-Z0-9_.-])."""
    digest = hashlib.sha1(key[1].encode()).hexdigest()[:20]
    return f"listen.{int(key[0])}.{digest}"


def _spawn(coro: Any) -> asyncio.Task:
    task = asyncio.ensure_future(coro)
    _tasks.add(task)
    task.add_done_callback(_finished)
    return task


def _finished(task: asyncio.Task) -> None:
    _tasks.discard(task)
    if not task.cancelled() and task.exception() is not None:  # e.g. Redis went away
        log.warning("listen-in relay task ended: %r", task.exception())


# --- the call's process ---------------------------------------------------------------------------

def publish(tap: Any, key: tuple[int, str]) -> asyncio.Task | None:
    """Answer remote joins for ``tap`` until the returned task is cancelled (None: no relay)."""
    layer = relay_layer()
    if layer is None:
        return None
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return None
    return _spawn(_serve(layer, tap, group_name(key)))


async def _serve(layer: Any, tap: Any, group: str) -> None:
    me = await layer.new_channel()
    seen: dict[str, float] = {}  # listener reply channel -> last keep-alive
    await layer.group_add(group, me)
    try:
        while True:
            message = await layer.receive(me)
            kind, reply = message.get("type"), message.get("reply")
            if not isinstance(reply, str):
                continue
            if kind == "listen.join":
                mix = tap.add_listener()
                if mix is None:
                    await _send(layer, reply, {"type": "listen.refuse"})
                    continue
                seen[reply] = time.monotonic()
                await _send(layer, reply, {"type": "listen.accept", "source": me})
                _spawn(_feed(layer, tap, mix, reply, seen))
            elif kind == "listen.keepalive" and reply in seen:
                seen[reply] = time.monotonic()
            elif kind == "listen.leave":
                seen.pop(reply, None)
    finally:
        await asyncio.shield(leave_group(layer, group, me))


async def leave_group(layer: Any, group: str, channel: str) -> None:
    """Best effort: a group member whose layer went away has nothing left to leave."""
    try:
        await layer.group_discard(group, channel)
    except Exception:
        pass


async def _feed(layer: Any, tap: Any, mix: ListenerMix, reply: str, seen: dict[str, float]) -> None:
    """One remote listener: paced 60 ms messages of its mix, then ``listen.end``."""
    next_at = time.monotonic()
    try:
        while not mix.closed and time.monotonic() - seen.get(reply, 0.0) < KEEPALIVE_TIMEOUT_S:
            pcm = np.concatenate([mix.pull() for _ in range(FRAMES_PER_MESSAGE)]).tobytes()
            await _send(layer, reply, {"type": "listen.audio", "pcm": pcm})
            next_at += MESSAGE_SECONDS
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
    finally:
        seen.pop(reply, None)
        tap.remove_listener(mix)
        await asyncio.shield(_send(layer, reply, {"type": "listen.end"}))


async def _send(layer: Any, channel: str, message: dict) -> None:
    try:
        await asyncio.wait_for(layer.send(channel, message), 1.0)
    except (ChannelFull, asyncio.TimeoutError, ConnectionError, OSError):
        pass  # a lost message is a short gap for one listener, never a stall for the call


# --- the server's process -------------------------------------------------------------------------

class RemoteCall:
    """A call in another process, as the listen service sees a local one (``add_listener`` /
    ``remove_listener``): one listener, fed by the messages arriving on its own channel."""

    def __init__(self, layer: Any, channel: str, source: str) -> None:
        self.layer, self.channel, self.source = layer, channel, source
        self.mix = ListenerMix(sides=("call",), max_seconds=0.6, prime_frames=REMOTE_PRIME_FRAMES)
        self._tasks: list[asyncio.Task] = []

    def add_listener(self) -> ListenerMix | None:
        if self._tasks or self.mix.closed:
            return None
        self._tasks = [_spawn(self._receive()), _spawn(self._keepalive())]
        return self.mix

    def remove_listener(self, listener: ListenerMix) -> None:
        self.mix.close()
        for task in self._tasks:
            task.cancel()
        _spawn(_send(self.layer, self.source, {"type": "listen.leave", "reply": self.channel}))

    async def _receive(self) -> None:
        try:
            while True:
                message = await asyncio.wait_for(self.layer.receive(self.channel), SILENT_SOURCE_TIMEOUT_S)
                if message.get("type") == "listen.end":
                    return
                pcm = message.get("pcm")
                if message.get("type") == "listen.audio" and isinstance(pcm, bytes):
                    self.mix.push("call", samples(pcm))
        except asyncio.TimeoutError:
            return
        finally:
            self.mix.close()  # the track ends, the service closes the browser's connection

    async def _keepalive(self) -> None:
        while True:
            await asyncio.sleep(KEEPALIVE_S)
            await _send(self.layer, self.source, {"type": "listen.keepalive", "reply": self.channel})


async def join(key: tuple[int, str]) -> RemoteCall | str | None:
    """Ask whichever process runs ``key`` for a feed: a RemoteCall, "refused" (ended or full),
    or None when no process answered (no relay, or the call is not live anywhere)."""
    layer = relay_layer()
    if layer is None:
        return None
    try:
        channel = await layer.new_channel()
        await layer.group_send(group_name(key), {"type": "listen.join", "reply": channel})
        message = await asyncio.wait_for(layer.receive(channel), JOIN_TIMEOUT_S)
    except (asyncio.TimeoutError, ConnectionError, OSError):
        return None
    if message.get("type") == "listen.accept" and isinstance(message.get("source"), str):
        return RemoteCall(layer, channel, message["source"])
    return "refused"
