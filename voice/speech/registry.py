"""Choose speech services by name: built-in names or a dotted path to any pipecat service class.

Settings (or environment): ``EVASITE_TTS`` (default "piper"), ``EVASITE_STT`` (default
"whisper", i.e. faster-whisper tiny.en; also "whisper-base" and "pocketsphinx"). A dotted path
``package.module.Class`` is instantiated with no arguments.
"""
from __future__ import annotations

import importlib
import os
from typing import Any, Callable, Optional

DEFAULT_TTS = "piper"
DEFAULT_STT = "whisper"


def _piper() -> Any:
    from voice.speech.piper_tts import make_piper_tts

    return make_piper_tts()


def _piper_stock() -> Any:
    from voice.speech.piper_tts import make_plain_piper_tts

    return make_plain_piper_tts()


def _espeak() -> Any:
    from voice.speech.espeak_tts import EspeakTTSService

    return EspeakTTSService()


def _pocketsphinx() -> Any:
    from voice.speech.pocketsphinx_stt import PocketsphinxSTTService

    return PocketsphinxSTTService()


TTS_BUILDERS: dict[str, Callable[[], Any]] = {
    "piper": _piper,  # bundled voice, model loaded once per process
    "piper-stock": _piper_stock,  # unmodified PiperTTSService on the bundled voice directory
    "espeak": _espeak,
    "espeak-ng": _espeak,
}
def _whisper(model_name: str) -> Callable[[], Any]:
    def build() -> Any:
        from voice.speech.whisper_stt import FasterWhisperSTTService

        return FasterWhisperSTTService(model_name)

    return build


STT_BUILDERS: dict[str, Callable[[], Any]] = {
    "whisper": _whisper("whisper-tiny.en"),
    "whisper-tiny.en": _whisper("whisper-tiny.en"),
    "whisper-base": _whisper("whisper-base"),
    "pocketsphinx": _pocketsphinx,
}
WHISPER_MODELS = {"whisper": "whisper-tiny.en", "whisper-tiny.en": "whisper-tiny.en", "whisper-base": "whisper-base"}
"""STT names that are faster-whisper, and the model each loads."""


def _setting(name: str, default: str) -> str:
    try:
        from django.conf import settings

        if settings.configured and getattr(settings, name, None):
            return str(getattr(settings, name))
    except Exception:
        pass
    return os.environ.get(name) or default


def _from_dotted(path: str) -> Any:
    module_name, _, attr = path.rpartition(".")
    if not module_name:
        raise ValueError(f"not a dotted path: {path!r}")
    target = getattr(importlib.import_module(module_name), attr)
    return target()


def active_tts() -> str:
    return _setting("EVASITE_TTS", DEFAULT_TTS)


def active_stt() -> str:
    return _setting("EVASITE_STT", DEFAULT_STT)


def make_tts(name: Optional[str] = None) -> Any:
    name = name or active_tts()
    if name in TTS_BUILDERS:
        return TTS_BUILDERS[name]()
    if "." in name:
        return _from_dotted(name)
    raise ValueError(f"unknown TTS {name!r}: use one of {', '.join(TTS_BUILDERS)} or a dotted class path")


def make_stt(name: Optional[str] = None) -> Any:
    name = name or active_stt()
    if name in STT_BUILDERS:
        return STT_BUILDERS[name]()
    if "." in name:
        return _from_dotted(name)
    raise ValueError(f"unknown STT {name!r}: use one of {', '.join(STT_BUILDERS)} or a dotted class path")


def make_vad() -> Any:
    from voice.speech.vad import make_vad_processor

    return make_vad_processor()
