"""One direction of the paced audio relay (harness.md §6.2).

The source's receive loop ``put``s chunks; ``run`` sends one frame per period to the destination
on an absolute clock, from a small jitter buffer, with silence whenever there is no audio (the
bridge streams continuously to every bot). Each frame is classified for the speaker's speech
timeline, then passes the direction's audio condition (what the line does to it, if anything)
on its way to the side that hears it; what was sent is kept for the recording.
"""
from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Awaitable, Callable

from voice.audio.pcm import resample
from voice.bridge.timeline import SpeechTimeline
from voice.protocol.channel import AudioChunk

if TYPE_CHECKING:  # the contract between the engine and the conditions (team.md)
    from voice.conditions.base import AudioCondition

READY_FRAMES = 5
MAX_UNDERFLOWS = 5


class JitterBuffer:
    """Becomes ready at 5 frames; a partial frame is never emitted; >5 underflows -> not ready."""

    def __init__(self, frame_bytes: int) -> None:
        self.frame_bytes = frame_bytes
        self._data = bytearray()
        self._ready = False
        self._underflows = 0

    def push(self, pcm: bytes) -> None:
        self._data.extend(pcm)

    def pop(self) -> tuple[bytes, bool]:
        """The next frame and whether it carries audio (``has_speech``)."""
        if not self._ready and len(self._data) >= READY_FRAMES * self.frame_bytes:
            self._ready, self._underflows = True, 0
        if self._ready:
            if len(self._data) >= self.frame_bytes:
                frame = bytes(self._data[: self.frame_bytes])
                del self._data[: self.frame_bytes]
                self._underflows = 0
                return frame, True
            self._underflows += 1
            if self._underflows > MAX_UNDERFLOWS:
                self._ready = False
        return bytes(self.frame_bytes), False


class ConditionError(RuntimeError):
    """An audio condition broke its contract (same number of samples out as in): a harness
    fault, so the session fails instead of scoring a conversation over a broken line."""


class AudioRelay:
    """Source -> destination audio at the destination's input rate."""

    def __init__(self, *, dest_rate: int, frame_seconds: float, condition: AudioCondition | None = None,
                 speech_threshold: float = 200.0) -> None:
        self.dest_rate = dest_rate
        self.frame_seconds = frame_seconds
        self.frame_samples = max(1, round(dest_rate * frame_seconds))
        self.condition = condition
        self._queue: asyncio.Queue[AudioChunk] = asyncio.Queue()
        self._buffer = JitterBuffer(self.frame_samples * 2)
        self.sent = bytearray()
        """Every frame sent (condition applied), at ``dest_rate``: the recording of what the
        destination heard."""
        self.timeline = SpeechTimeline(frame_seconds=self.frame_samples / dest_rate, threshold=speech_threshold)
        """The speaker's speech in the frames sent, classified before the condition."""

    def put(self, chunk: AudioChunk) -> None:
        """Queue a chunk for sending; the caller has checked it (``voice.audio.pcm.usable_chunk``)."""
        self._queue.put_nowait(chunk)

    def _drain(self) -> None:
        while not self._queue.empty():
            chunk = self._queue.get_nowait()
            self._buffer.push(resample(chunk.pcm, chunk.sample_rate, self.dest_rate, num_channels=chunk.num_channels))

    def _heard(self, frame: bytes) -> bytes:
        """``frame`` as the destination hears it."""
        if self.condition is None:
            return frame
        heard = self.condition.process(frame, self.dest_rate)
        if len(heard) != len(frame):
            raise ConditionError(f"{type(self.condition).__name__} returned {len(heard)} bytes "
                                 f"for a frame of {len(frame)}")
        return heard

    async def run(
        self,
        send: Callable[[AudioChunk], Awaitable[None]],
        *,
        forwarding: Callable[[], bool],
        start: float | None = None,
        tap: Callable[[AudioChunk], None] | None = None,
    ) -> None:
        """Send frames until cancelled; while ``forwarding()`` is false, only drain.

        ``start`` (``time.monotonic()``) is frame 0's due time: relays given the same start share
        one audio clock. ``tap`` sees every chunk after it was sent."""
        next_target = time.monotonic() if start is None else start
        while True:
            self._drain()
            if forwarding():
                frame, audible = self._buffer.pop()
                self.timeline.add(frame, audible=audible)
                chunk = AudioChunk(self._heard(frame), self.dest_rate)
                await send(chunk)
                self.sent.extend(chunk.pcm)
                if tap is not None:
                    tap(chunk)
                next_target += self.frame_seconds
            else:
                next_target = time.monotonic() + 0.1
            await asyncio.sleep(max(0.001, next_target - time.monotonic()))
