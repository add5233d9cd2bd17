"""Speaker-side conditions as plain settings: how the passenger speaks, not what the hearer gets.

``rate`` and ``voice`` change the passenger's TTS (voice.speech builds it from these settings);
``barge-in`` changes when the passenger talks. Kept here, pure, so the spec parser, run records
and tests need no pipecat.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

SECOND_VOICES = ("espeak", "hibari")
"""Voices the passenger can switch to: espeak-ng (Debian, robotic, male) and hibari's bundled
"heart" voice (the hibari-tts wheel, a small Kokoro-distilled American female voice)."""


@dataclass(frozen=True)
class SpeakerSettings:
    """How to build the passenger's TTS: which voice (None = the default, Piper's joe) and how
    fast (1.0 = the voice's own pace, 1.3 = 30% faster, i.e. the same words in 1/1.3 the time)."""

    voice: Optional[str] = None
    rate: float = 1.0

    @property
    def is_default(self) -> bool:
        return self.voice is None and self.rate == 1.0


@dataclass(frozen=True)
class BargeInSettings:
    """The passenger cuts into an agent turn once it has heard ``after_s`` of the agent's speech in
    it (shorter turns are left alone), at most ``max_cuts`` times a call and never into the turn
    that answers its own cut-in (a caller who interrupted lets the agent's next turn finish)."""

    after_s: float = 4.0
    max_cuts: int = 3
