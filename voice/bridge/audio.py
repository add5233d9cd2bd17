"""PCM helpers: speech classification (§6.5), resampling (§6.4) and the stereo recording (§6.6)."""
from __future__ import annotations

import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soxr

from voice.protocol.channel import AudioChunk


MIN_SAMPLE_RATE = 8000
MAX_SAMPLE_RATE = 96000
MAX_CHANNELS = 8


def _whole_samples(pcm: bytes, num_channels: int = 1) -> bytes:
    """``pcm`` without a trailing partial sample frame (an odd byte count cannot be s16le)."""
    frame_bytes = 2 * max(1, num_channels)
    return pcm[: len(pcm) - len(pcm) % frame_bytes]


def rms(pcm: bytes) -> float:
    """Root mean square of s16le samples (0 for an empty buffer)."""
    samples = np.frombuffer(_whole_samples(pcm), dtype="<i2")
    if samples.size == 0:
        return 0.0
    return float(np.sqrt(np.mean(samples.astype(np.float64) ** 2)))


def is_speech(pcm: bytes, threshold: float) -> bool:
    return rms(pcm) >= threshold


def resample(pcm: bytes, from_rate: int, to_rate: int, *, num_channels: int = 1) -> bytes:
    """High-quality, non-streaming resampling of one chunk to mono at ``to_rate``.

    Interleaved multi-channel input is down-mixed (channel mean) first. Mono at equal rates
    passes through untouched.
    """
    if num_channels == 1 and (from_rate == to_rate or not pcm):
        return pcm
    samples = np.frombuffer(_whole_samples(pcm, num_channels), dtype="<i2")
    if num_channels > 1:
        samples = np.round(samples.reshape(-1, num_channels).mean(axis=1)).astype("<i2")
    if from_rate != to_rate and samples.size:
        samples = soxr.resample(samples, from_rate, to_rate, quality="VHQ")
    return np.asarray(samples, dtype="<i2").tobytes()


def usable_chunk(chunk: AudioChunk) -> tuple[AudioChunk | None, str | None]:
    """``chunk`` made safe to relay and classify, and what was wrong with it.

    A rate or channel count no resampler accepts drops the chunk (None); a trailing partial
    sample is trimmed. Why here: one bad frame from a bot must not end the relay direction.
    """
    if not MIN_SAMPLE_RATE <= chunk.sample_rate <= MAX_SAMPLE_RATE:
        return None, f"sample rate {chunk.sample_rate} outside {MIN_SAMPLE_RATE}-{MAX_SAMPLE_RATE} Hz"
    if not 1 <= chunk.num_channels <= MAX_CHANNELS:
        return None, f"{chunk.num_channels} channels"
    pcm = _whole_samples(chunk.pcm, chunk.num_channels)
    if len(pcm) == len(chunk.pcm):
        return chunk, None
    return AudioChunk(pcm, chunk.sample_rate, chunk.num_channels), f"{len(chunk.pcm)} bytes is not whole samples"


@dataclass(frozen=True)
class Recording:
    """What the bridge sent: left = to the agent, right = to the user, both at ``sample_rate``."""

    left: bytes
    right: bytes
    sample_rate: int

    def interleaved(self) -> bytes:
        left = np.frombuffer(self.left, dtype="<i2")
        right = np.frombuffer(self.right, dtype="<i2")
        length = max(left.size, right.size)
        stereo = np.zeros((length, 2), dtype="<i2")
        stereo[: left.size, 0] = left
        stereo[: right.size, 1] = right
        return stereo.tobytes()

    def write_wav(self, path: str | Path) -> None:
        """16-bit stereo WAV, the shorter channel zero-padded."""
        with wave.open(str(path), "wb") as out:
            out.setnchannels(2)
            out.setsampwidth(2)
            out.setframerate(self.sample_rate)
            out.writeframes(self.interleaved())
