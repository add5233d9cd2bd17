"""Offline speech: Piper (bundled voice), espeak-ng fallback, pocketsphinx, Silero VAD."""
from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time

import numpy as np
import pytest

from tests.browser import require
from tests.voice.speech_helpers import synthesize
from voice.audio.pcm import resample, rms
from voice.speech import registry
from voice.speech.pocketsphinx_stt import decode_pcm, shared_decoder


@pytest.fixture(scope="module")
def piper_phrase() -> tuple[bytes, int]:
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


async def test_espeak_fallback_speaks():
    require(shutil.which("espeak-ng") is not None, "espeak-ng is not installed (scripts/setup.sh installs it)")
    pcm, rate = await synthesize(registry.make_tts("espeak"), "Change my flight, please.")
    assert rate == 24000 and len(pcm) / 2 / rate > 0.5 and rms(pcm) > 300


def test_pocketsphinx_hears_piper(piper_phrase):
    pcm, rate = piper_phrase
    text = decode_pcm(shared_decoder(), resample(pcm, rate, 16000))
    # Never the exact sentence (ASR is approximate), but the content words of a clear Piper phrase.
    heard = set(text.lower().split())
    assert {"change", "flight"} <= heard, text


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


def _speaking_spans(states: list, step_secs: float) -> list[tuple[float, float]]:
    from pipecat.audio.vad.vad_analyzer import VADState

    spans: list[tuple[float, float]] = []
    for index, state in enumerate(states):
        talking = state in (VADState.SPEAKING, VADState.STOPPING)
        if talking and (not spans or spans[-1][1] >= 0):
            spans.append((index * step_secs, -1.0))
        elif not talking and spans and spans[-1][1] < 0:
            spans[-1] = (spans[-1][0], index * step_secs)
    return spans


async def test_vad_skips_settled_digital_silence_and_hears_what_pipecats_silero_hears(piper_phrase):
    from pipecat.audio.vad.silero import SileroVADAnalyzer
    from pipecat.audio.vad.vad_analyzer import VADParams

    from voice.speech.vad import SILENCE_SETTLE_WINDOWS, STOP_SECS, WARM_UP_WINDOWS, make_vad_analyzer

    pcm, rate = piper_phrase
    speech = resample(pcm, rate, 16000)
    gaps = [3.0, 1.0, 6.0]  # seconds of the bridge's digital silence between three turns
    audio = bytes(16000) + b"".join(speech + bytes(int(g * 32000)) for g in gaps)
    ours, plain = make_vad_analyzer(16000), SileroVADAnalyzer(sample_rate=16000, params=VADParams(stop_secs=STOP_SECS))
    scored = []
    model = ours._model
    ours._model = lambda samples, sr: scored.append(len(samples)) or model(samples, sr)
    ours._model.reset_states = model.reset_states
    step = 640  # the bridge's 20 ms frames
    heard: dict[str, list] = {"ours": [], "plain": []}
    for vad, name in ((ours, "ours"), (plain, "plain")):
        vad.set_sample_rate(16000)
        for offset in range(0, len(audio) - step + 1, step):
            heard[name].append(await vad.analyze_audio(audio[offset: offset + step]))
    spans = {name: _speaking_spans(states, 0.02) for name, states in heard.items()}
    assert len(spans["ours"]) == len(spans["plain"]) == 3, spans
    for (start, stop), (plain_start, plain_stop) in zip(spans["ours"], spans["plain"]):
        assert abs(start - plain_start) <= 0.1 and abs(stop - plain_stop) <= 0.1, spans
    # Every settled window of silence went unscored: the 0.5 s before the first turn is scored
    # whole, each gap only for its first SILENCE_SETTLE_WINDOWS (plus windows straddling speech)
    # and the WARM_UP_WINDOWS of silence the model scores again before the next turn.
    windows = len(audio) // 1024
    settled = sum(int(g * 16000) // 512 - SILENCE_SETTLE_WINDOWS - 1 - WARM_UP_WINDOWS for g in gaps)
    assert len(scored) <= windows - settled, (len(scored), windows, settled)
    assert len(scored) >= windows - sum(int(g * 16000) // 512 for g in gaps) - 1


async def test_vad_scores_on_the_loop_and_measures_no_loudness_of_digital_silence(piper_phrase, monkeypatch):
    """The model runs on the loop's own thread (no hand-off per window), and the loudness of a
    block of digital silence is taken as the floor instead of measured: the smoothed volumes,
    hence the states, are the same as measuring every block."""
    import threading
    import types

    import pipecat.audio.volume as volume_module
    from pipecat.audio.vad.vad_analyzer import VADAnalyzer

    from voice.speech.vad import SILENT_VOLUME_WINDOWS, make_vad_analyzer

    pcm, rate = piper_phrase
    speech = resample(pcm, rate, 16000)
    audio = speech + bytes(3 * 32000) + speech + bytes(32000)
    measured = {"count": 0}
    measure = volume_module.calculate_audio_volume

    def counting(block, sample_rate):
        measured["count"] += 1
        return measure(block, sample_rate)

    monkeypatch.setattr(volume_module, "calculate_audio_volume", counting)
    ours, every_block = make_vad_analyzer(16000), make_vad_analyzer(16000)
    every_block._get_smoothed_volume = types.MethodType(VADAnalyzer._get_smoothed_volume, every_block)
    model, threads = ours._model, set()
    ours._model = lambda samples, sr: threads.add(threading.get_ident()) or model(samples, sr)
    ours._model.reset_states = model.reset_states
    volumes: dict[str, list[float]] = {"ours": [], "every": []}
    states: dict[str, list] = {"ours": [], "every": []}
    counts = {}
    for vad, name in ((ours, "ours"), (every_block, "every")):
        vad.set_sample_rate(16000)
        measured["count"] = 0
        for offset in range(0, len(audio) - 639, 640):
            states[name].append(await vad.analyze_audio(audio[offset: offset + 640]))
            volumes[name].append(vad._prev_volume)
        counts[name] = measured["count"]
    assert threads == {threading.get_ident()}
    assert states["ours"] == states["every"] and "SPEAKING" in {s.name for s in states["ours"]}
    assert np.allclose(volumes["ours"], volumes["every"], rtol=0, atol=1e-12)
    silent_blocks = (3 * 16000 // 512 - SILENT_VOLUME_WINDOWS) + (16000 // 512 - SILENT_VOLUME_WINDOWS)
    assert counts["every"] - counts["ours"] >= silent_blocks - 4, counts


async def test_after_a_long_silence_the_vad_hears_a_phone_line_caller_from_the_first_word():
    """A lost turn, found in calls over ``phone:loss=5%``: after the bridge's digital silence the
    model met the caller in a freshly reset state, scored "No, that's all. Thanks, goodbye." on a
    phone line at 0.3-0.6 and the VAD never said the caller spoke (the call then ended by
    inactivity). Piper without its sampling noise makes the same audio every time."""
    from piper import SynthesisConfig

    from voice.conditions.phone import PhoneLine
    from voice.speech.piper_tts import JOE_VOICE, _loaded_voice, bundled_voice_dir
    from voice.speech.vad import make_vad_analyzer

    voice = _loaded_voice(str(bundled_voice_dir() / f"{JOE_VOICE}.onnx"))
    exact = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)
    words = b"".join(chunk.audio_int16_bytes for chunk in voice.synthesize("No, that's all. Thanks, goodbye.", exact))
    speech = resample(words, voice.config.sample_rate, 16000)
    line, heard = PhoneLine(loss_pct=5, seed=3), b""
    audio = bytes(6 * 32000) + speech + bytes(2 * 32000)  # the caller speaks after 6 s of silence
    for offset in range(0, len(audio), 640):
        heard += line.process(audio[offset: offset + 640], 16000)
    vad = make_vad_analyzer(16000)
    vad.set_sample_rate(16000)
    speaking = [(await vad.analyze_audio(heard[offset: offset + 1024])).name == "SPEAKING"
                for offset in range(0, len(heard) - 1023, 1024)]
    samples = np.frombuffer(speech, np.int16)
    voiced = np.flatnonzero(np.abs(samples) > 1000)
    onset = (6 * 16000 + voiced[0]) / 512  # the first loud sample, in windows
    phrase = (voiced[-1] - voiced[0]) / 512
    first = speaking.index(True) - onset if True in speaking else None
    # Heard from "that's all" at the latest (the short "No," alone may not reach the VAD's 0.2 s);
    # the reset model never heard the caller at all.
    assert first is not None and first * 0.032 <= 1.0, first
    assert sum(speaking) >= phrase / 3, (sum(speaking), phrase)


def test_registry_names_and_errors():
    with pytest.raises(ValueError, match="unknown TTS"):
        registry.make_tts("nope")
    with pytest.raises(ValueError, match="unknown STT"):
        registry.make_stt("nope")
    stt = registry.make_stt("voice.speech.pocketsphinx_stt.PocketsphinxSTTService")
    assert type(stt).__name__ == "PocketsphinxSTTService"


async def test_pocketsphinx_pools_a_decoder_only_after_its_decode_finished(monkeypatch):
    import threading

    from voice.speech import pocketsphinx_stt

    release_decode = threading.Event()
    decoding = threading.Event()

    def slow_decode(decoder, pcm: bytes) -> str:
        decoding.set()
        release_decode.wait(5)
        return "hello"

    monkeypatch.setattr(pocketsphinx_stt, "decode_pcm", slow_decode)
    monkeypatch.setattr(pocketsphinx_stt, "_IDLE_DECODERS", [])
    service = pocketsphinx_stt.PocketsphinxSTTService()
    decoder = object()
    service._decoder = decoder
    segment = asyncio.create_task(service.run_stt(bytes(3200)).__anext__())
    assert await asyncio.to_thread(decoding.wait, 5)
    segment.cancel()  # the pipeline is cancelled mid-segment; the thread decodes on
    service._release()
    assert pocketsphinx_stt._IDLE_DECODERS == [], "still in use by the running decode"
    release_decode.set()
    for _ in range(100):
        if pocketsphinx_stt._IDLE_DECODERS:
            break
        await asyncio.sleep(0.01)
    assert pocketsphinx_stt._IDLE_DECODERS == [decoder]


async def test_cancelled_espeak_run_kills_its_process(tmp_path, monkeypatch):
    from voice.speech.espeak_tts import EspeakTTSService

    pid_file = tmp_path / "pid"
    fake = tmp_path / "espeak-ng"
    fake.write_text(f'#!/bin/sh\necho $$ > "{pid_file}"\nexec sleep 30\n')
    fake.chmod(0o755)
    service = EspeakTTSService(binary=str(fake))
    run = asyncio.create_task(service.run_tts("Hello there.", "ctx").__anext__())
    deadline = time.monotonic() + 30  # a loaded machine may take seconds to start the process
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    pid = int(pid_file.read_text())
    try:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # killed and reaped, not left running
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_local_synthesizers_wait_for_a_slow_sentence_before_calling_it_silent():
    """Between two sentences of a turn the local voices wait longer than pipecat's 3 s, and a
    caller's own wait still wins."""
    from voice.speech.espeak_tts import EspeakTTSService
    from voice.speech.hibari_tts import HibariTTSService
    from voice.speech.piper_tts import make_piper_tts
    from voice.speech.synthesis_wait import LOCAL_SYNTHESIS_WAIT_S

    for service in (make_piper_tts(), EspeakTTSService(), HibariTTSService()):
        assert service._stop_frame_timeout_s == LOCAL_SYNTHESIS_WAIT_S > 3.0, service
    assert make_piper_tts(stop_frame_timeout_s=1.5)._stop_frame_timeout_s == 1.5


class _SlowVoice:
    """A loaded Piper voice on a starved CPU: each sentence comes ``delay_s`` late."""

    def __init__(self, voice, delay_s: float) -> None:
        self._voice, self._delay_s = voice, delay_s
        self.config = voice.config
        self.made = bytearray()

    def synthesize(self, text: str, syn_config=None):
        for chunk in self._voice.synthesize(text, syn_config=syn_config):
            time.sleep(self._delay_s)  # in pipecat's worker thread, as a slow synthesis would be
            self.made += chunk.audio_int16_bytes
            yield chunk


async def test_a_sentence_slower_than_the_wait_keeps_its_context_and_all_its_audio(tmp_path):
    """However long a local voice takes over a sentence (here 3 times pipecat's wait), its
    context stays open while it works: no silent context (pipecat's "bot stopped speaking" in
    the middle of a turn), and every sample it made is pushed, in order."""
    from loguru import logger

    from voice.speech.espeak_tts import ESPEAK_RATE, EspeakTTSService
    from voice.speech.piper_tts import make_piper_tts

    # A wait of a second: the keepalives (4 a wait) stay ahead of it even when a niced test
    # process is off the CPU for half a second.
    wait_s, delay_s = 1.0, 3.0
    silent: list[str] = []
    sink = logger.add(silent.append, level="WARNING", filter=lambda r: "completed with no audio" in r["message"])
    try:
        piper = make_piper_tts(stop_frame_timeout_s=wait_s)
        piper._voice = slow = _SlowVoice(piper._voice, delay_s)
        pcm, _ = await synthesize(piper, "I need to change my flight. The one on Friday.", slow.config.sample_rate)
        assert len(slow.made) > 0 and pcm == bytes(slow.made)

        require(shutil.which("espeak-ng") is not None, "espeak-ng is not installed (scripts/setup.sh installs it)")
        late = tmp_path / "espeak-ng"
        late.write_text(f'#!/bin/sh\nsleep {delay_s}\nexec "{shutil.which("espeak-ng")}" "$@"\n')
        late.chmod(0o755)
        line = "Change my flight, please."
        on_time, _ = await synthesize(EspeakTTSService(stop_frame_timeout_s=wait_s), line, ESPEAK_RATE)
        late_pcm, _ = await synthesize(EspeakTTSService(binary=str(late), stop_frame_timeout_s=wait_s), line,
                                       ESPEAK_RATE)
        assert len(on_time) > 0 and late_pcm == on_time  # espeak-ng renders a line the same every time
    finally:
        logger.remove(sink)
    assert not silent, silent
