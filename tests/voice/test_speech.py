"""Offline speech: Piper (bundled voice), espeak-ng fallback, pocketsphinx, Silero VAD."""
from __future__ import annotations

import shutil

import pytest

from tests.voice.speech_helpers import resample, rms, synthesize
from voice.speech import registry
from voice.speech.pocketsphinx_stt import decode_pcm, shared_decoder


@pytest.fixture(scope="module")
def piper_phrase() -> tuple[bytes, int]:
    import asyncio

    import pipecat.services.piper.tts as piper_module

    def no_download(*args, **kwargs):
        raise AssertionError("Piper tried to download a voice")

    original = piper_module.download_voice
    piper_module.download_voice = no_download
    try:
        service = registry.make_tts("piper")
        return asyncio.run(synthesize(service, "I need to change my flight."))
    finally:
        piper_module.download_voice = original


def test_piper_speaks_offline_from_bundled_voice(piper_phrase):
    pcm, rate = piper_phrase
    assert rate == 24000
    assert len(pcm) / 2 / rate > 0.8
    assert rms(pcm) > 500


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng not installed")
async def test_espeak_fallback_speaks():
    pcm, rate = await synthesize(registry.make_tts("espeak"), "Change my flight, please.")
    assert rate == 24000 and len(pcm) / 2 / rate > 0.5 and rms(pcm) > 300


def test_pocketsphinx_hears_piper(piper_phrase):
    pcm, rate = piper_phrase
    text = decode_pcm(shared_decoder(), resample(pcm, rate, 16000))
    assert text.strip()  # never the exact words: ASR is approximate


async def test_silero_vad_detects_piper_speech(piper_phrase):
    from pipecat.audio.vad.vad_analyzer import VADState

    from voice.speech.vad import make_vad_analyzer

    pcm, rate = piper_phrase
    audio = bytes(16000) + resample(pcm, rate, 16000) + bytes(32000)  # 0.5 s, speech, 1 s
    vad = make_vad_analyzer(16000)
    vad.set_sample_rate(16000)
    step = vad.num_frames_required() * 2
    states = []
    for offset in range(0, len(audio) - step, step):
        states.append(await vad.analyze_audio(audio[offset : offset + step]))
    speaking = [i for i, s in enumerate(states) if s == VADState.SPEAKING]
    assert speaking, "VAD never reported speech"
    first_speech_secs = speaking[0] * step / 2 / 16000
    assert 0.4 < first_speech_secs < 1.5
    assert states[-1] == VADState.QUIET


def test_registry_names_and_errors():
    with pytest.raises(ValueError, match="unknown TTS"):
        registry.make_tts("nope")
    with pytest.raises(ValueError, match="unknown STT"):
        registry.make_stt("nope")
    stt = registry.make_stt("voice.speech.pocketsphinx_stt.PocketsphinxSTTService")
    assert type(stt).__name__ == "PocketsphinxSTTService"
