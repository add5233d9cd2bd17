"""PCM helpers: speech classification (§6.5), resampling (§6.4) and the stereo recording (§6.6)."""
from __future__ import annotations

import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soxr


def rms(pcm: bytes) -> float:
    """Root mean square of s16le samples (0 for an empty buffer)."""
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2")
    if samples.size == 0:
        return 0.0
    return float(np.sqrt(np.mean(samples.astype(np.float64) ** 2)))


def is_speech(pcm: bytes, threshold: float) -> bool:
    return rms(pcm) >= threshold


def resample(pcm: bytes, from_rate: int, to_rate: int) -> bytes:
    """High-quality, non-streaming resampling of one chunk; equal rates pass through untouched."""
    if from_rate == to_rate or not pcm:
        return pcm
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2")
    out = soxr.resample(samples, from_rate, to_rate, quality="VHQ")
    return np.asarray(out, dtype="<i2").tobytes()


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
