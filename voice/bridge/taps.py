"""The bridge's listen-in tap: every frame a relay sends is also offered to the listeners of the
call, as the speaker's audio. With nobody listening it only forwards; with listeners it resamples
once per side and pushes into bounded buffers, never awaiting anything, so listening cannot slow
or stall the relay (voice.listen.mixer)."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Awaitable, Callable, Iterator

from voice.bridge.conversation import other
from voice.listen import registry, remote
from voice.listen.mixer import ListenerMix, SideResampler
from voice.protocol.channel import AudioChunk

MAX_LISTENERS = 8

Send = Callable[[AudioChunk], Awaitable[None]]


class LiveTap:
    """One call's listeners and the per-side resamplers that feed them."""

    def __init__(self, key: registry.LiveKey | None = None, *, max_listeners: int = MAX_LISTENERS) -> None:
        self.key = key
        self.max_listeners = max_listeners
        self._listeners: tuple[ListenerMix, ...] = ()
        self._resamplers: dict[str, SideResampler] = {}
        self._lock = threading.Lock()
        self.closed = False
        self.feed_errors = 0

    def sender(self, dest_side: str, send: Send) -> Send:
        """``send`` for the relay towards ``dest_side``, also feeding what it carries (the other
        side's speech) to the listeners."""
        speaker = other(dest_side)

        async def send_and_tap(chunk: AudioChunk) -> None:
            await send(chunk)
            self.feed(speaker, chunk)

        return send_and_tap

    def feed(self, speaker: str, chunk: AudioChunk) -> None:
        listeners = self._listeners  # a tuple swapped whole under the lock: safe to read without it
        if not listeners:
            return
        try:
            resampler = self._resamplers.setdefault(speaker, SideResampler())
            samples = resampler.to_mix_rate(chunk.pcm, chunk.sample_rate)
            for listener in listeners:
                listener.push(speaker, samples)
        except Exception:  # listening is best effort; the call itself must go on
            self.feed_errors += 1

    def add_listener(self) -> ListenerMix | None:
        """A new listener's mix, or None when the call has ended or is full."""
        with self._lock:
            if self.closed or len(self._listeners) >= self.max_listeners:
                return None
            listener = ListenerMix()
            self._listeners = (*self._listeners, listener)
            return listener

    def remove_listener(self, listener: ListenerMix) -> None:
        listener.close()
        with self._lock:
            self._listeners = tuple(item for item in self._listeners if item is not listener)

    @property
    def listener_count(self) -> int:
        return len(self._listeners)

    def close(self) -> None:
        """The call ended: every listener's track ends once it notices."""
        with self._lock:
            self.closed = True
            listeners, self._listeners = self._listeners, ()
        for listener in listeners:
            listener.close()


class _NoTap(LiveTap):
    """Text sessions and sessions nobody can reach: relays send untouched."""

    def sender(self, dest_side: str, send: Send) -> Send:
        return send

    def add_listener(self) -> ListenerMix | None:
        return None


NO_TAP: LiveTap = _NoTap()


@contextmanager
def open_tap(key: registry.LiveKey | None, modality: str) -> Iterator[LiveTap]:
    """Register a voice session for listening in while the block runs (in this process, and over
    the Redis channel layer when there is one); closed and unregistered however the session ends."""
    if key is None or modality != "voice":
        yield NO_TAP
        return
    tap = LiveTap(key)
    registry.register(key, tap)
    publisher = remote.publish(tap, key)  # other processes' listeners, when REDIS_URL is set
    try:
        yield tap
    finally:
        tap.close()
        registry.unregister(key, tap)
        if publisher is not None:
            publisher.cancel()
