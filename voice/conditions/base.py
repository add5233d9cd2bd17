"""The audio-condition contract (team.md) and the few helpers every condition shares.

A condition is a pure PCM transform: 16-bit little-endian mono in, the same number of samples
out, stateful per stream and seeded at construction, so the same seed over the same audio gives
the same bytes. No Django and no pipecat here: the engine calls ``process`` on each relayed
chunk, and tests and benches call it on plain arrays.
"""
from __future__ import annotations

import hashlib
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

FULL_SCALE = 32768.0
"""s16le full scale: dBov levels are relative to a full-scale square wave (power 1.0 here)."""


@runtime_checkable
class AudioCondition(Protocol):
    """What the engine applies, one instance per direction, to audio on its way to the hearer."""

    def process(self, pcm: bytes, sample_rate: int) -> bytes:
        """Transform one chunk; returns exactly as many samples as it was given."""
        ...


def pcm_to_float(pcm: bytes) -> np.ndarray:
    """s16le bytes (a trailing odd byte is ignored) as float64 samples in [-1, 1)."""
    usable = len(pcm) - len(pcm) % 2
    return np.frombuffer(pcm[:usable], dtype="<i2").astype(np.float64) / FULL_SCALE


def float_to_pcm(samples: np.ndarray) -> bytes:
    """Float samples back to s16le, rounded and saturated (never wrapped) at full scale."""
    scaled = np.clip(np.rint(np.asarray(samples, dtype=np.float64) * FULL_SCALE), -32768, 32767)
    return scaled.astype("<i2").tobytes()


def same_length(out: bytes, pcm: bytes) -> bytes:
    """``out`` with ``pcm``'s odd trailing byte put back: half a sample is not audio to change,
    but the contract is as many bytes out as in."""
    return out + pcm[-1:] if len(pcm) % 2 else out


def derive_seed(base_seed: int, *parts: str) -> int:
    """A 64-bit seed from a base seed and names (stream, direction, condition kind).

    Why not ``hash()``: Python salts string hashes per process, and a run must reproduce
    in another process, on a Celery worker, or on resume.
    """
    digest = hashlib.sha256(repr((int(base_seed), *map(str, parts))).encode()).digest()
    return int.from_bytes(digest[:8], "little")


def prepare(condition: AudioCondition, sample_rate: int) -> None:
    """Build a condition's filters and noise loop for ``sample_rate`` now, if it has any.

    Why: conditions build lazily on their first chunk (only then is the rate known), and the
    first build takes 10 ms to a few seconds (babble at 48 kHz, first time on a machine). The
    engine should call this before the call starts, off the event loop (``asyncio.to_thread``),
    so the first relayed frame costs what the others do."""
    ready = getattr(condition, "prepare", None)
    if callable(ready):
        ready(sample_rate)


class Passthrough:
    """``clean``: hands every chunk back untouched (so the engine needs no special case)."""

    def process(self, pcm: bytes, sample_rate: int) -> bytes:
        return pcm

    def prepare(self, sample_rate: int) -> None:
        return None


class Chain:
    """Several conditions applied in order (``noise:snr=10+phone``: a noisy room on a phone line)."""

    def __init__(self, conditions: Sequence[AudioCondition]) -> None:
        self.conditions = tuple(conditions)

    def process(self, pcm: bytes, sample_rate: int) -> bytes:
        for condition in self.conditions:
            pcm = condition.process(pcm, sample_rate)
        return pcm

    def prepare(self, sample_rate: int) -> None:
        for condition in self.conditions:
            prepare(condition, sample_rate)


class PerRateState:
    """Mixin for conditions whose filters depend on the sample rate: rebuilt when it changes.

    Why: a peer may change its rate mid-call (rare, but the bridge accepts it); the stream's
    state then restarts instead of filtering 24 kHz audio with 16 kHz coefficients.
    """

    _rate: int = 0

    def prepare(self, sample_rate: int) -> None:
        """Build the state for ``sample_rate`` ahead of the first chunk (see ``prepare``)."""
        self._ensure_rate(sample_rate)

    def _ensure_rate(self, sample_rate: int) -> None:
        if sample_rate != self._rate:
            if sample_rate <= 0:
                raise ValueError(f"sample rate must be positive, got {sample_rate}")
            self._rate = sample_rate
            self._setup(sample_rate)

    def _setup(self, sample_rate: int) -> None:  # pragma: no cover - each condition defines it
        raise NotImplementedError
