"""Active speech level, in the spirit of ITU-T P.56: the power of speech while it is active.

Why: an SNR that averaged speech power over the whole call would count the silences between
turns and the pauses between words, so the same "snr=10" would be harsher on a terse caller
than on a talkative one. Here speech power is the mean over 10 ms blocks judged active, i.e.
above an absolute floor and within ``MARGIN_DB`` of the active level itself (found by a few
fixed-point iterations), with a 200 ms hangover after each active block, as P.56 does.
"""
from __future__ import annotations

import math

import numpy as np

BLOCK_S = 0.010
MARGIN_DB = 15.9
"""P.56's margin between the active level and the activity threshold."""
HANGOVER_S = 0.200
FLOOR_DBOV = -60.0
"""Below this a block is never speech (s16le dither and faint hiss sit far under it)."""


def db(power: float) -> float:
    """Power (full scale = 1.0) in dBov; -inf for silence."""
    return 10 * math.log10(power) if power > 0 else float("-inf")


def block_powers(samples: np.ndarray, rate: int) -> np.ndarray:
    """Mean power of each whole 10 ms block (a trailing partial block is dropped)."""
    size = max(1, int(round(rate * BLOCK_S)))
    count = samples.size // size
    blocks = np.asarray(samples[: count * size], dtype=np.float64).reshape(count, size)
    return np.mean(blocks * blocks, axis=1)


def _with_hangover(above: np.ndarray, hangover_blocks: int) -> np.ndarray:
    """Blocks that are above the threshold or within ``hangover_blocks`` after one that is."""
    active = above.copy()
    index = np.flatnonzero(above)
    for step in range(1, hangover_blocks + 1):
        follow = index + step
        active[follow[follow < active.size]] = True
    return active


def active_mask(powers: np.ndarray) -> np.ndarray:
    """Which blocks count as active speech (see the module docstring)."""
    floor = 10 ** (FLOOR_DBOV / 10)
    hangover = int(round(HANGOVER_S / BLOCK_S))
    above = powers > floor
    if not above.any():
        return above
    level = float(np.mean(powers[above]))
    mask = above
    for _ in range(8):  # converges in 2-4 steps on speech
        threshold = max(floor, level * 10 ** (-MARGIN_DB / 10))
        mask = _with_hangover(powers > threshold, hangover)
        new_level = float(np.mean(powers[mask]))
        if abs(db(new_level) - db(level)) < 0.01:
            break
        level = new_level
    return mask


def active_speech_level(samples: np.ndarray, rate: int) -> float:
    """Active speech power of a whole clip (full scale = 1.0); 0.0 when it holds no speech."""
    powers = block_powers(samples, rate)
    mask = active_mask(powers)
    return float(np.mean(powers[mask])) if mask.any() else 0.0


class ActiveLevelTracker:
    """The active level of a stream so far, updated block by block (causal).

    Why causal: the condition must scale its noise before it has heard the rest of the call.
    It starts from ``initial_dbov`` (P.56's nominal -26 dBov) until the first speech arrives,
    then follows the running mean of active blocks, the activity threshold moving with it.
    """

    def __init__(self, rate: int, initial_dbov: float = -26.0) -> None:
        self.block = max(1, int(round(rate * BLOCK_S)))
        self._hangover_blocks = int(round(HANGOVER_S / BLOCK_S))
        self._pending = np.zeros(0)
        self._sum = 0.0
        self._count = 0
        self._since_active = self._hangover_blocks + 1
        self._initial = 10 ** (initial_dbov / 10)

    @property
    def level(self) -> float:
        """The current estimate (power, full scale = 1.0)."""
        return self._sum / self._count if self._count else self._initial

    def update(self, samples: np.ndarray) -> None:
        joined = np.concatenate([self._pending, samples]) if self._pending.size else samples
        count = joined.size // self.block
        self._pending = joined[count * self.block:].copy()
        if count == 0:
            return
        powers = np.mean(joined[: count * self.block].reshape(count, self.block) ** 2, axis=1)
        floor = 10 ** (FLOOR_DBOV / 10)
        for power in powers.tolist():
            reference = self._sum / self._count if self._count else floor
            threshold = max(floor, reference * 10 ** (-MARGIN_DB / 10))
            if power > threshold:
                self._since_active = 0
            else:
                self._since_active += 1
            if self._since_active <= self._hangover_blocks:
                self._sum += power
                self._count += 1
