"""``noise``: additive white, pink or babble noise at an SNR measured on the speech.

The SNR is the hearer-side ratio of the incoming speech's *active* level (``levels``) to the
noise's mean power. The noise is a seamless loop (periodic by construction, so it never clicks)
read from a seeded offset; its gain follows the stream's active level as the call goes on,
starting from P.56's nominal -26 dBov before the first word, so the room is already noisy when
the caller starts talking.
"""
from __future__ import annotations

import functools

import numpy as np

from voice.conditions.base import PerRateState, derive_seed, float_to_pcm, pcm_to_float, same_length
from voice.conditions.levels import ActiveLevelTracker

NOISE_TYPES = ("white", "pink", "babble")
LOOP_S = 20.0
PINK_LOW_HZ = 20.0
"""Below this pink noise is flat: a true 1/f spectrum would put most power at DC."""


def colored_loop(kind: str, rate: int, seed: int, seconds: float = LOOP_S) -> np.ndarray:
    """A periodic noise loop of unit mean power: the inverse FFT of a random-phase spectrum
    whose amplitude is flat (white) or falls as 1/sqrt(f) (pink, -3 dB per octave)."""
    rng = np.random.default_rng(seed)
    size = int(rate * seconds)
    freqs = np.fft.rfftfreq(size, 1.0 / rate)
    spectrum = rng.standard_normal(freqs.size) + 1j * rng.standard_normal(freqs.size)
    if kind == "pink":
        spectrum /= np.sqrt(np.maximum(freqs, PINK_LOW_HZ))
    elif kind != "white":
        raise ValueError(f"not a synthetic noise type: {kind!r}")
    spectrum[0] = 0.0
    loop = np.fft.irfft(spectrum, n=size)
    return loop / np.sqrt(np.mean(loop * loop))


@functools.lru_cache(maxsize=8)
def _cached_loop(kind: str, rate: int, seed: int) -> np.ndarray:
    if kind == "babble":
        from voice.conditions.babble import babble_loop

        return babble_loop(rate)
    loop = colored_loop(kind, rate, seed)
    loop.setflags(write=False)
    return loop


class Noise(PerRateState):
    """Adds ``kind`` noise ``snr_db`` below the stream's active speech level."""

    def __init__(self, *, kind: str = "pink", snr_db: float = 10.0, seed: int = 0) -> None:
        if kind not in NOISE_TYPES:
            raise ValueError(f"noise type must be one of {', '.join(NOISE_TYPES)}, got {kind!r}")
        self.kind = kind
        self.snr_db = float(snr_db)
        self.seed = int(seed)

    def _setup(self, sample_rate: int) -> None:
        # One loop per kind and rate, shared by every stream; the seed picks where in it this
        # stream starts (20 s of loop at 16 kHz offers 320,000 starting points).
        self._loop = _cached_loop(self.kind, sample_rate, 0)
        rng = np.random.default_rng(derive_seed(self.seed, "offset"))
        self._position = int(rng.integers(self._loop.size))
        self._tracker = ActiveLevelTracker(sample_rate)
        self._snr = 10 ** (self.snr_db / 10)

    def _next_noise(self, count: int) -> np.ndarray:
        index = (self._position + np.arange(count)) % self._loop.size
        self._position = (self._position + count) % self._loop.size
        return self._loop[index]

    def process(self, pcm: bytes, sample_rate: int) -> bytes:
        self._ensure_rate(sample_rate)
        speech = pcm_to_float(pcm)
        if speech.size == 0:
            return pcm
        gain = np.sqrt(self._tracker.level / self._snr)
        out = speech + gain * self._next_noise(speech.size)
        self._tracker.update(speech)
        return same_length(float_to_pcm(out), pcm)
