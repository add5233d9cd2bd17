"""The listen-in tap of one voice call: every frame the bridge relays is also offered to the
call's listeners, as the speaker's audio (what the other side heard).

The caller of the bridge opens it (``open_tap``) and hands it to ``run_session(tap=...)``; the
engine only calls ``relayed`` (voice.bridge.taps.RelayTap). With nobody listening that returns at
once; with listeners it resamples once per side and pushes into bounded buffers, never awaiting
anything, so listening cannot slow or stall the relay (voice.listen.mixer).
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

from voice.audio.pcm import StreamResampler
from voice.listen import registry, remote
from voice.listen.mixer import MIX_RATE, ListenerMix
from voice.protocol.channel import AudioChunk

MAX_LISTENERS = 8

SPEAKER_HEARD_BY = {"agent": "user", "user": "agent"}
"""Whose voice the audio relayed to a side carries."""


class LiveTap:
    """One call's listeners and the per-side resamplers that feed them."""

    def __init__(self, key: registry.LiveKey | None = None, *, max_listeners: int = MAX_LISTENERS) -> None:
        self.key = key
        self.max_listeners = max_listeners
        self._listeners: tuple[ListenerMix, ...] = ()
        self._resamplers: dict[str, StreamResampler] = {}
        self._lock = threading.Lock()
        self.closed = False
        self.feed_errors = 0

    def relayed(self, dest_side: str, chunk: AudioChunk) -> None:
        """The bridge sent ``chunk`` to ``dest_side``: the listeners hear it as the other side."""
        self.feed(SPEAKER_HEARD_BY[dest_side], chunk)

    def feed(self, speaker: str, chunk: AudioChunk) -> None:
        listeners = self._listeners  # a tuple swapped whole under the lock: safe to read without it
        if not listeners:
            return
        try:
            resampler = self._resamplers.setdefault(speaker, StreamResampler(MIX_RATE))
            mixed = resampler.resample(chunk.pcm, chunk.sample_rate)
            for listener in listeners:
                listener.push(speaker, mixed)
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


@contextmanager
def open_tap(key: registry.LiveKey | None, modality: str) -> Iterator[LiveTap | None]:
    """A tap registered for listening in while the block runs (in this process, and over the
    Redis channel layer when there is one), closed and unregistered however the session ends.
    None for text sessions and sessions nobody can reach (no key): nothing to listen to."""
    if key is None or modality != "voice":
        yield None
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
