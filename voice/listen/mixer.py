"""Mixing both sides of a call for one listener. Pure numpy, no event loop: the bridge pushes
from its loop, a WebRTC track pulls from the server's, so every buffer sits behind one lock that
is held for microseconds and never waited on for audio. Each side's buffer is bounded and drops
its oldest audio, so a stalled listener costs the bridge nothing and its delay stays small."""
from __future__ import annotations

import threading

import numpy as np

MIX_RATE = 48_000
FRAME_SAMPLES = 960
"""20 ms at 48 kHz: what the Opus encoder of a WebRTC track takes per frame."""
MAX_BUFFER_SECONDS = 0.4
PRIME_FRAMES = 2
"""A side plays again after an underflow only once this many frames are queued, so a producer
on a 16 ms clock and a consumer on a 20 ms clock do not chop each other into gaps."""


class _SideBuffer:
    def __init__(self, max_samples: int, prime_frames: int) -> None:
        self.max_samples = max_samples
        self.prime_frames = prime_frames
        self.data = np.zeros(0, dtype=np.int16)
        self.primed = False
        self.dropped = 0

    def push(self, samples: np.ndarray) -> None:
        data = np.concatenate((self.data, samples.astype(np.int16, copy=False)))
        overflow = data.size - self.max_samples
        if overflow > 0:
            self.dropped += overflow
            data = data[overflow:]
        self.data = data

    def pop(self, count: int) -> np.ndarray | None:
        if not self.primed and self.data.size >= self.prime_frames * count:
            self.primed = True
        if self.primed and self.data.size >= count:
            frame, self.data = self.data[:count], self.data[count:]
            return frame
        self.primed = False
        return None


class ListenerMix:
    """Both sides' audio queued for one listener; ``pull`` returns their sum, silence if none."""

    def __init__(self, sides: tuple[str, ...] = ("agent", "user"), max_seconds: float = MAX_BUFFER_SECONDS,
                 prime_frames: int = PRIME_FRAMES) -> None:
        self._buffers = {side: _SideBuffer(int(MIX_RATE * max_seconds), prime_frames) for side in sides}
        self._lock = threading.Lock()
        self.closed = False

    def push(self, side: str, samples: np.ndarray) -> None:
        """Queue 48 kHz samples of ``side``; never blocks, drops the oldest beyond the bound."""
        with self._lock:
            buffer = self._buffers.get(side)
            if buffer is not None and not self.closed:
                buffer.push(samples)

    def pull(self, count: int = FRAME_SAMPLES) -> np.ndarray:
        """``count`` mixed samples (int16), clipped rather than wrapped."""
        mixed = np.zeros(count, dtype=np.int32)
        with self._lock:
            for buffer in self._buffers.values():
                frame = buffer.pop(count)
                if frame is not None:
                    mixed += frame
        return np.clip(mixed, -32768, 32767).astype(np.int16)

    def close(self) -> None:
        with self._lock:
            self.closed = True

    def queued(self) -> dict[str, int]:
        """Samples waiting per side (for tests and the bench)."""
        with self._lock:
            return {side: buffer.data.size for side, buffer in self._buffers.items()}

    def dropped(self) -> dict[str, int]:
        with self._lock:
            return {side: buffer.dropped for side, buffer in self._buffers.items()}
