"""PCM helpers, in one place for the bots, the bridge, the listen-in mix and the conditions.

Everything here is 16-bit little-endian PCM (s16le): sample views, RMS and speech
classification (harness.md §6.5), one-chunk and streaming resampling (§6.4), the checks that
make a peer's chunk safe to relay, and the stereo recording (§6.6). No event loop, no pipecat.
"""
from __future__ import annotations

import math
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soxr

from voice.protocol.channel import AudioChunk

MIN_SAMPLE_RATE = 8000
MAX_SAMPLE_RATE = 96000
MAX_CHANNELS = 8


def whole_samples(pcm: bytes, num_channels: int = 1) -> bytes:
    """``pcm`` without a trailing partial sample frame (an odd byte count cannot be s16le)."""
    frame_bytes = 2 * max(1, num_channels)
    return pcm[: len(pcm) - len(pcm) % frame_bytes]


def samples(pcm: bytes) -> np.ndarray:
    """The mono samples of ``pcm`` as a read-only int16 view (a partial sample is ignored)."""
    return np.frombuffer(whole_samples(pcm), dtype="<i2")


def rms(pcm: bytes) -> float:
    """Root mean square of s16le samples (0 for an empty buffer).

    An exact integer sum of squares: it runs on every relayed frame, and a dot product is a
    fraction of ``np.mean``'s cost there."""
    values = samples(pcm).astype(np.int64)
    if values.size == 0:
        return 0.0
    return math.sqrt(int(values @ values) / values.size)


def is_speech(pcm: bytes, threshold: float) -> bool:
    return rms(pcm) >= threshold


def resample(pcm: bytes, from_rate: int, to_rate: int, *, num_channels: int = 1) -> bytes:
    """High-quality, non-streaming resampling of one chunk to mono at ``to_rate``.

    Interleaved multi-channel input is down-mixed (channel mean) first. Mono at equal rates
    passes through untouched.
    """
    if num_channels == 1 and (from_rate == to_rate or not pcm):
        return pcm
    values = np.frombuffer(whole_samples(pcm, num_channels), dtype="<i2")
    if num_channels > 1:
        values = np.round(values.reshape(-1, num_channels).mean(axis=1)).astype("<i2")
    if from_rate != to_rate and values.size:
        values = soxr.resample(values, from_rate, to_rate, quality="VHQ")
    return np.asarray(values, dtype="<i2").tobytes()


class StreamResampler:
    """One continuous mono stream resampled to ``to_rate`` chunk by chunk.

    Unlike ``resample`` the filter state carries over between chunks, so small frames join
    without clicks at their edges; a change of input rate starts a new stream.
    """

    def __init__(self, to_rate: int, *, quality: str = "HQ") -> None:
        self.to_rate = to_rate
        self._quality = quality
        self._from_rate: int | None = None
        self._stream: soxr.ResampleStream | None = None

    def resample(self, pcm: bytes, sample_rate: int) -> np.ndarray:
        """The next piece of the stream at ``to_rate`` (may be shorter or longer than the input
        by the filter's delay; the total follows the rate ratio)."""
        values = samples(pcm)
        if sample_rate == self.to_rate:
            return values.copy()
        if sample_rate != self._from_rate:
            self._from_rate = sample_rate
            self._stream = soxr.ResampleStream(sample_rate, self.to_rate, 1, dtype="int16", quality=self._quality)
        assert self._stream is not None
        return self._stream.resample_chunk(values)


def usable_chunk(chunk: AudioChunk) -> tuple[AudioChunk | None, str | None]:
    """``chunk`` made safe to relay and classify, and what was wrong with it.

    A rate or channel count no resampler accepts drops the chunk (None); a trailing partial
    sample is trimmed. Why here: one bad frame from a bot must not end the relay direction.
    """
    if not MIN_SAMPLE_RATE <= chunk.sample_rate <= MAX_SAMPLE_RATE:
        return None, f"sample rate {chunk.sample_rate} outside {MIN_SAMPLE_RATE}-{MAX_SAMPLE_RATE} Hz"
    if not 1 <= chunk.num_channels <= MAX_CHANNELS:
        return None, f"{chunk.num_channels} channels"
    pcm = whole_samples(chunk.pcm, chunk.num_channels)
    if len(pcm) == len(chunk.pcm):
        return chunk, None
    return AudioChunk(pcm, chunk.sample_rate, chunk.num_channels), f"{len(chunk.pcm)} bytes is not whole samples"


@dataclass(frozen=True)
class Recording:
    """What the bridge sent, i.e. what each side heard: left = to the agent, right = to the user,
    both at ``sample_rate``."""

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
