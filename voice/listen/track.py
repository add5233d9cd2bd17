"""The outgoing WebRTC track of one listener: 20 ms of the call's mix at 48 kHz on the track's
own real-time clock (silence when nobody speaks), as Opus packets made on the loop
(voice.webrtc.opus: no thread hop per frame), ending once the call has ended."""
from __future__ import annotations

import asyncio
import time
from collections import deque

from aiortc import MediaStreamTrack
from aiortc.mediastreams import MediaStreamError
from av import Packet

from voice.listen.mixer import FRAME_SAMPLES, MIX_RATE, ListenerMix
from voice.webrtc.opus import OpusPacketEncoder

MAX_LAG_FRAMES = 5
"""If the server's loop fell this far behind, skip ahead instead of sending a burst."""


class LiveMixTrack(MediaStreamTrack):
    kind = "audio"

    def __init__(self, mix: ListenerMix) -> None:
        super().__init__()
        self.mix = mix
        self._start: float | None = None
        self._pts = 0
        self._encoder = OpusPacketEncoder()
        self._packets: deque[Packet] = deque()
        self.frames_sent = 0

    async def recv(self) -> Packet:
        while not self._packets:  # the encoder's look-ahead holds back the very first frame
            if self.readyState != "live":
                raise MediaStreamError
            if self.mix.closed:
                self.stop()  # emits "ended": the listen service closes the peer connection
                raise MediaStreamError
            now = time.monotonic()
            if self._start is None:
                self._start = now
            due = self._start + self._pts / MIX_RATE
            if now - due > MAX_LAG_FRAMES * FRAME_SAMPLES / MIX_RATE:
                self._start = now - self._pts / MIX_RATE
            elif due > now:
                await asyncio.sleep(due - now)
            samples = self.mix.pull(FRAME_SAMPLES)
            self._packets.extend(self._encoder.encode(samples.tobytes(), MIX_RATE))
            self._pts += FRAME_SAMPLES
            self.frames_sent += 1
        return self._packets.popleft()
