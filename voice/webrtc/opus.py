"""Opus packets made on the event loop, for outgoing tracks on a busy server.

Given raw frames, aiortc's sender encodes each one in a thread pool, so every 20 ms of audio costs
two cross-thread wake-ups; on a machine whose cores are busy those wake-ups, not the encoding
(under 0.1 ms a frame), are what delays the audio. A track that returns the packets this encoder
makes is only packed and sent. The connection must then negotiate Opus (``prefer_opus``)."""
from __future__ import annotations

import fractions
from typing import Any

import av

RATE = 48_000
PACKET_SAMPLES = 960
"""20 ms at 48 kHz, one Opus packet."""
TIME_BASE = fractions.Fraction(1, RATE)
BIT_RATE = 64_000


class OpusPacketEncoder:
    """Mono s16le PCM chunks at any rate in; 20 ms mono Opus packets out, with contiguous
    timestamps from 0 (in 1/48000) as aiortc's packer expects."""

    def __init__(self, bit_rate: int = BIT_RATE) -> None:
        self._codec = av.CodecContext.create("libopus", "w")
        self._codec.bit_rate = bit_rate
        self._codec.format = "s16"
        self._codec.layout = "mono"
        self._codec.sample_rate = RATE
        self._codec.time_base = TIME_BASE
        self._codec.options = {"application": "voip"}
        self._resampler: av.AudioResampler | None = None
        self._rate: int | None = None
        self._in_pts = 0
        self._out_pts = 0

    def encode(self, pcm: bytes, sample_rate: int) -> list[av.Packet]:
        """The packets completed by this chunk (none while the 20 ms in hand are not full)."""
        samples = len(pcm) // 2
        if samples == 0:
            return []
        if sample_rate != self._rate:  # the resampler is fixed to its first input's rate
            self._rate, self._in_pts = sample_rate, 0
            self._resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE, frame_size=PACKET_SAMPLES)
        frame = av.AudioFrame(format="s16", layout="mono", samples=samples)
        frame.planes[0].update(pcm[: samples * 2])
        frame.sample_rate, frame.time_base, frame.pts = sample_rate, fractions.Fraction(1, sample_rate), self._in_pts
        self._in_pts += samples
        packets = []
        assert self._resampler is not None
        for resampled in self._resampler.resample(frame):
            for packet in self._codec.encode(resampled):
                packet.pts, packet.time_base = self._out_pts, TIME_BASE
                self._out_pts += PACKET_SAMPLES
                packets.append(packet)
        return packets


def prefer_opus(pc: Any, sender: Any) -> None:
    """Negotiate only Opus on ``sender``'s transceiver (every WebRTC browser implements it), so
    the track may hand aiortc ready-made Opus packets."""
    from aiortc import RTCRtpSender

    transceiver = next(t for t in pc.getTransceivers() if t.sender is sender)
    codecs = [c for c in RTCRtpSender.getCapabilities("audio").codecs if c.mimeType.lower() == "audio/opus"]
    transceiver.setCodecPreferences(codecs)
