"""Speaker-side conditions build the passenger's TTS: the rate condition really changes how long
the same words take, and the voice condition really speaks with another engine."""
from __future__ import annotations

import importlib.util
import shutil

import pytest

from tests.browser import require
from tests.voice.speech_helpers import synthesize
from voice.audio.pcm import rms
from voice.conditions import SpeakerSettings, parse_condition
from voice.speech import registry

SENTENCE = "My confirmation number is Z, K, three, F, F, W, and my last name is Rodriguez."


def _seconds(pcm: bytes, rate: int) -> float:
    return len(pcm) / 2 / rate


async def test_piper_rate_shortens_the_same_words() -> None:
    """rate divides Piper's length_scale. Durations do not follow exactly (Piper rounds each
    phoneme up to whole frames): 1.3 measured 0.85 of the time here, 0.8 measured 1.18."""
    plain, rate = await synthesize(registry.make_tts("piper"), SENTENCE)
    faster, _ = await synthesize(registry.make_tts("piper", rate=1.3), SENTENCE)
    slower, _ = await synthesize(registry.make_tts("piper", rate=0.8), SENTENCE)
    assert rms(faster) > 500 and rms(slower) > 500
    assert 1 / 1.3 - 0.02 < _seconds(faster, rate) / _seconds(plain, rate) < 0.9
    assert 1.1 < _seconds(slower, rate) / _seconds(plain, rate) < 1 / 0.8 + 0.03


async def test_espeak_rate_scales_its_words_per_minute() -> None:
    require(shutil.which("espeak-ng") is not None, "espeak-ng is not installed (scripts/setup.sh installs it)")
    service = registry.make_passenger_tts(parse_condition("voice:espeak+rate:1.5").speaker)
    assert type(service).__name__ == "EspeakTTSService" and service._rate_wpm == 248
    plain, rate = await synthesize(registry.make_tts("espeak"), SENTENCE)
    faster, _ = await synthesize(service, SENTENCE)
    assert _seconds(faster, rate) < _seconds(plain, rate) * 0.8


def test_passenger_tts_follows_the_condition_and_is_recorded_by_name() -> None:
    assert type(registry.make_passenger_tts(SpeakerSettings())).__name__ == "BundledPiperTTSService"
    assert registry.passenger_tts_name(SpeakerSettings()) == registry.active_tts()
    assert registry.passenger_tts_name(SpeakerSettings(voice="espeak", rate=1.3)) == "espeak@1.3"
    with pytest.raises(ValueError, match="needs a built-in TTS"):
        registry.make_tts("voice.speech.espeak_tts.EspeakTTSService", rate=1.2)


async def test_hibari_is_a_second_offline_voice() -> None:
    require(importlib.util.find_spec("hibari") is not None, "hibari-tts is not installed (pip install -r requirements.txt)")
    from voice.speech.hibari_tts import HIBARI_RATE, synthesize as hibari_pcm

    pcm, rate = await synthesize(registry.make_passenger_tts(SpeakerSettings(voice="hibari")), SENTENCE)
    assert rate == 24000 and _seconds(pcm, rate) > 3.0 and rms(pcm) > 500
    # Deterministic (fixed noise seed) and paced by the rate condition.
    assert hibari_pcm(SENTENCE) == hibari_pcm(SENTENCE)
    plain, fast = hibari_pcm(SENTENCE), hibari_pcm(SENTENCE, rate=1.3)
    assert 1 / 1.3 - 0.02 < _seconds(fast, HIBARI_RATE) / _seconds(plain, HIBARI_RATE) < 0.9  # 0.86 measured
