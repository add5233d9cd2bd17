"""Shared by the listen-in tests: tones, how strongly a frequency is present in audio, and an
aiortc peer that listens like a browser."""
from __future__ import annotations

import asyncio

import numpy as np
from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError

from voice.listen import registry, service
from voice.webrtc.config import allow_loopback_candidates


def tone(hz: float, rate: int, seconds: float, amplitude: int = 8000) -> bytes:
    t = np.arange(int(rate * seconds)) / rate
    return (amplitude * np.sin(2 * np.pi * hz * t)).astype("<i2").tobytes()


def band_power(samples: np.ndarray, rate: int, hz: float, width: float = 30.0) -> float:
    """Share of the signal's spectral energy within ``width`` Hz of ``hz`` (0..1)."""
    spectrum = np.abs(np.fft.rfft(samples.astype(np.float64))) ** 2
    freqs = np.fft.rfftfreq(samples.size, 1 / rate)
    total = spectrum.sum()
    return float(spectrum[np.abs(freqs - hz) <= width].sum() / total) if total else 0.0


async def browser_offer() -> tuple[RTCPeerConnection, dict]:
    allow_loopback_candidates()
    pc = RTCPeerConnection()
    pc.addTransceiver("audio", direction="recvonly")
    await pc.setLocalDescription(await pc.createOffer())
    return pc, {"sdp": pc.localDescription.sdp, "type": "offer"}


class Listener:
    """An aiortc 'browser' that keeps every decoded sample until the server ends its track."""

    def __init__(self) -> None:
        self.samples: list[np.ndarray] = []
        self.ended = asyncio.Event()
        self.rate = 0

    async def join(self, key: registry.LiveKey) -> RTCPeerConnection:
        pc, offer = await browser_offer()

        @pc.on("track")
        def on_track(track) -> None:
            asyncio.ensure_future(self._pull(track))

        answer = await service.listen_offer(key, offer)
        assert isinstance(answer, service.Answer), answer
        await pc.setRemoteDescription(RTCSessionDescription(**answer.as_json()))
        self.pc = pc
        return pc

    async def _pull(self, track) -> None:
        try:
            while True:
                frame = await track.recv()
                self.rate = frame.sample_rate
                self.samples.append(frame.to_ndarray().reshape(-1, len(frame.layout.channels)).mean(axis=1))
        except MediaStreamError:
            self.ended.set()

    def audio(self) -> np.ndarray:
        return np.concatenate(self.samples) if self.samples else np.zeros(0)
