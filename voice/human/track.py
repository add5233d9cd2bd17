"""The audio the tester hears: an aiortc track fed by the bridge's paced relay.

The relay already sends one frame per period in real time (silence included), so the track adds
no clock of its own: it encodes each frame to Opus as it is asked for it and hands aiortc the
packets (voice.webrtc.opus), so no frame waits on a thread hop. A sender that falls behind loses
the oldest audio rather than growing a delay.
"""
from __future__ import annotations

import asyncio
import time
from collections import deque

import av
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

from voice.protocol.channel import AudioChunk
from voice.webrtc.opus import OpusPacketEncoder

MAX_QUEUED_FRAMES = 50
"""About 0.8 s of 16 ms frames; beyond it the browser is not keeping up."""


class CallAudioTrack(MediaStreamTrack):
    """Outgoing (server -> browser) audio of one human call, as 20 ms Opus packets."""

    kind = "audio"

    def __init__(self, *, measure: bool = False) -> None:
        super().__init__()
        self._queue: asyncio.Queue[tuple[AudioChunk, float]] = asyncio.Queue(maxsize=MAX_QUEUED_FRAMES)
        self._encoder = OpusPacketEncoder()
        self._ready: deque[tuple[av.Packet, float]] = deque()
        self.dropped = 0
        self.delays: deque[float] | None = deque(maxlen=100_000) if measure else None
        """Seconds from the relay's send to the packet handed to aiortc, encoding included, for the
        chunk that completed each packet (bench/human_relay.py)."""

    def push(self, chunk: AudioChunk) -> None:
        if self.readyState != "live":
            return
        if self._queue.full():
            self._queue.get_nowait()
            self.dropped += 1
        self._queue.put_nowait((chunk, time.perf_counter()))

    async def recv(self) -> av.Packet:
        if self.readyState != "live":
            raise MediaStreamError
        while not self._ready:
            chunk, queued_at = await self._queue.get()
            for packet in self._encoder.encode(chunk.pcm, chunk.sample_rate):
                self._ready.append((packet, queued_at))
        packet, queued_at = self._ready.popleft()
        if self.delays is not None:
            self.delays.append(time.perf_counter() - queued_at)
        return packet
