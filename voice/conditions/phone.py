"""``phone``: a telephone line — 8 kHz, 300–3400 Hz, G.711 μ-law in 20 ms packets, with
optional packet loss and jitter.

Stages, each keeping its state between chunks:

    rate → 8 kHz (anti-alias lowpass) → 300–3400 Hz bandpass → 20 ms packets → μ-law
      → lost / late packets (silence, or the last packet repeated and faded) → decode
      → 8 kHz → rate (anti-image lowpass, nothing left above 4 kHz) → fixed-delay FIFO

Loss is exact, not a coin per packet: every 100 packets (2 s) exactly ``loss`` percent are
dropped at seeded random places (a fraction carries over to the next window), so ``loss=5%``
loses 5% of a short call, not 3% or 8% by luck, and two agents face the same share.
Jitter: each packet gets a seeded extra delay, exponential with mean ``jitter`` ms; a fixed
playout buffer of ``buffer`` ms delays the whole stream, and a packet later than that is lost.
"""
from __future__ import annotations

import numpy as np

from voice.conditions import g711
from voice.conditions.base import PerRateState, derive_seed, float_to_pcm, pcm_to_float, same_length
from voice.conditions.dsp import RationalResampler, SampleFifo, StreamingFIR, bandpass, kaiser_taps

LINE_RATE = 8000
PACKET = 160
"""20 ms at 8 kHz: one RTP packet of G.711."""
LOSS_WINDOW = 100
BAND_LOW_HZ, BAND_HIGH_HZ = 300.0, 3400.0
BAND_TRANSITION_HZ = 160.0
"""Passband edges at 300 and 3400 Hz; full stopband 160 Hz outside each (below 140 Hz and above
3560 Hz), after the G.712 channel mask's shape."""
RESAMPLE_CUTOFF_HZ, RESAMPLE_TRANSITION_HZ = 3700.0, 600.0
"""Half-amplitude at 3.7 kHz and fully stopped at 4 kHz, on the way down and back up."""
PLC_MODES = ("silence", "repeat")
REPEAT_FADE = 0.25
"""``plc=repeat``: each further lost packet in a row is repeated 25% quieter (silent from the fifth)."""


class PhoneLine(PerRateState):
    """A phone line between the speaker and the hearer (see the module docstring)."""

    def __init__(self, *, loss_pct: float = 0.0, jitter_ms: float = 0.0, buffer_ms: float = 60.0,
                 plc: str = "silence", seed: int = 0) -> None:
        if not 0.0 <= loss_pct <= 100.0:
            raise ValueError(f"loss must be a percentage between 0 and 100, got {loss_pct}")
        if jitter_ms < 0 or buffer_ms < 0:
            raise ValueError("jitter and buffer are durations in ms, never negative")
        if plc not in PLC_MODES:
            raise ValueError(f"plc must be one of {', '.join(PLC_MODES)}, got {plc!r}")
        self.loss_pct = float(loss_pct)
        self.jitter_ms = float(jitter_ms)
        self.buffer_ms = float(buffer_ms) if jitter_ms > 0 else 0.0
        self.plc = plc
        self.seed = int(seed)
        self.packets = 0
        self.packets_lost = 0
        """Dropped by the loss process."""
        self.packets_late = 0
        """Arrived after the playout buffer's deadline (jitter)."""

    def _setup(self, sample_rate: int) -> None:
        self._down = RationalResampler(sample_rate, LINE_RATE, cutoff_hz=RESAMPLE_CUTOFF_HZ,
                                       transition_hz=RESAMPLE_TRANSITION_HZ)
        taps = kaiser_taps(BAND_TRANSITION_HZ, LINE_RATE)
        self._band = StreamingFIR(bandpass(BAND_LOW_HZ - BAND_TRANSITION_HZ / 2,
                                           BAND_HIGH_HZ + BAND_TRANSITION_HZ / 2, LINE_RATE, taps))
        self._up = RationalResampler(LINE_RATE, sample_rate, cutoff_hz=RESAMPLE_CUTOFF_HZ,
                                     transition_hz=RESAMPLE_TRANSITION_HZ)
        self._pending = np.zeros(0)
        self._loss_rng = np.random.default_rng(derive_seed(self.seed, "loss"))
        self._jitter_rng = np.random.default_rng(derive_seed(self.seed, "jitter"))
        self._window_lost: set[int] = set()
        self._last_good = np.zeros(PACKET, dtype=np.int16)
        self._lost_in_row = 0
        ratio = sample_rate / LINE_RATE
        # Room for one packet being assembled, the resamplers' rounding, and the playout buffer.
        prefill = int(np.ceil((PACKET + 2) * ratio)) + 4 + int(round(self.buffer_ms / 1000 * sample_rate))
        self._fifo = SampleFifo(prefill)
        filter_delay = (self._down.delay_in_samples + (self._up.delay_in_samples + (taps - 1) / 2) * ratio)
        self.delay_s = (prefill + filter_delay) / sample_rate
        """How much later the hearer gets each sound than the speaker made it."""

    def _packet_is_missing(self, index: int) -> bool:
        offset = index % LOSS_WINDOW
        if offset == 0:
            window = index // LOSS_WINDOW
            count = int(np.floor(self.loss_pct * (window + 1) + 1e-9)) - int(np.floor(self.loss_pct * window + 1e-9))
            self._window_lost = set(self._loss_rng.choice(LOSS_WINDOW, size=count, replace=False).tolist())
        if offset in self._window_lost:
            self.packets_lost += 1
            return True
        if self.jitter_ms > 0 and self._jitter_rng.exponential(self.jitter_ms) > self.buffer_ms:
            self.packets_late += 1
            return True
        return False

    def _carry(self, packet: np.ndarray) -> np.ndarray:
        """One 20 ms packet across the line: μ-law there and back, unless it goes missing."""
        index = self.packets
        self.packets += 1
        pcm = np.clip(np.rint(packet * 32768.0), -32768, 32767).astype(np.int16)
        received = g711.decode(g711.encode(pcm))
        if not self._packet_is_missing(index):
            self._last_good, self._lost_in_row = received, 0
            return received.astype(np.float64) / 32768.0
        self._lost_in_row += 1
        if self.plc == "repeat":
            gain = max(0.0, 1.0 - REPEAT_FADE * (self._lost_in_row - 1))
            return self._last_good.astype(np.float64) / 32768.0 * gain
        return np.zeros(PACKET)

    def process(self, pcm: bytes, sample_rate: int) -> bytes:
        self._ensure_rate(sample_rate)
        x = pcm_to_float(pcm)
        if x.size == 0:
            return pcm
        line = self._band(self._down(x))
        self._pending = np.concatenate([self._pending, line])
        whole = self._pending.size // PACKET
        carried = [self._carry(self._pending[i * PACKET:(i + 1) * PACKET]) for i in range(whole)]
        self._pending = self._pending[whole * PACKET:]
        if carried:
            self._fifo.push(self._up(np.concatenate(carried)))
        return same_length(float_to_pcm(self._fifo.pop(x.size)), pcm)
