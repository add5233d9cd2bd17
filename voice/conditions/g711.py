"""G.711 μ-law, vectorised: the companding of every North American and Japanese phone call.

The classic segment encoder (bias 0x84, clip 32635, 8 segments of 16 steps, bits inverted),
so ``encode``/``decode`` agree bit for bit with the ITU reference tables.
"""
from __future__ import annotations

import numpy as np

BIAS = 0x84
CLIP = 32635


def encode_formula(samples: np.ndarray) -> np.ndarray:
    """int16 samples → μ-law bytes (uint8), computed (``encode`` looks it up in a table)."""
    x = np.asarray(samples, dtype=np.int32)
    sign = np.where(x < 0, 0x80, 0)
    magnitude = np.minimum(np.abs(x), CLIP) + BIAS
    exponent = np.clip(np.frexp(magnitude.astype(np.float64))[1] - 8, 0, 7)
    mantissa = (magnitude >> (exponent + 3)) & 0x0F
    return (~(sign | (exponent << 4) | mantissa) & 0xFF).astype(np.uint8)


def decode_formula(codes: np.ndarray) -> np.ndarray:
    """μ-law bytes → int16 samples, computed (``decode`` looks it up in a table)."""
    code = ~np.asarray(codes, dtype=np.int32) & 0xFF
    exponent = (code >> 4) & 0x07
    magnitude = (((code & 0x0F) << 3) + BIAS) << exponent
    magnitude -= BIAS
    return np.where(code & 0x80, -magnitude, magnitude).astype(np.int16)


_ENCODE_TABLE = encode_formula(np.arange(-32768, 32768))
_DECODE_TABLE = decode_formula(np.arange(256))


def encode(samples: np.ndarray) -> np.ndarray:
    """int16 samples → μ-law bytes (uint8), by table: a 20 ms packet in a few microseconds."""
    return _ENCODE_TABLE[np.asarray(samples, dtype=np.int32) + 32768]


def decode(codes: np.ndarray) -> np.ndarray:
    """μ-law bytes → int16 samples, by table."""
    return _DECODE_TABLE[np.asarray(codes, dtype=np.intp)]
