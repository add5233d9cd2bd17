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


def _piper(rate: float = 1.0) -> Any:
    from voice.speech.piper_tts import make_piper_tts

    return make_piper_tts(rate=rate)


def _piper_stock(rate: float = 1.0) -> Any:
    from voice.speech.piper_tts import make_plain_piper_tts

    if rate != 1.0:
        raise ValueError("piper-stock speaks at its own pace only; use piper for a speaking rate")
    return make_plain_piper_tts()


def _espeak(rate: float = 1.0) -> Any:
    from voice.speech.espeak_tts import make_espeak_tts

    return make_espeak_tts(rate=rate)


def _hibari(rate: float = 1.0) -> Any:
    from voice.speech.hibari_tts import make_hibari_tts

    return make_hibari_tts(rate=rate)


def _pocketsphinx() -> Any:
    from voice.speech.pocketsphinx_stt import PocketsphinxSTTService

    return PocketsphinxSTTService()


TTS_BUILDERS: dict[str, Callable[..., Any]] = {
    "piper": _piper,  # bundled voice, model loaded once per process
    "piper-stock": _piper_stock,  # unmodified PiperTTSService on the bundled voice directory
    "espeak": _espeak,
    "espeak-ng": _espeak,
    "hibari": _hibari,  # hibari-tts's bundled "heart" voice: the passenger's second voice
}
"""Each builder takes ``rate`` (speaking rate, 1.0 = the voice's own pace)."""


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


def make_tts(name: Optional[str] = None, *, rate: float = 1.0) -> Any:
    """A TTS service by name (default: the configured one), speaking at ``rate``."""
    name = name or active_tts()
    if name in TTS_BUILDERS:
        return TTS_BUILDERS[name](rate=rate)
    if "." in name:
        if rate != 1.0:
            raise ValueError(f"a speaking rate needs a built-in TTS ({', '.join(TTS_BUILDERS)}), not {name}")
        return _from_dotted(name)
    raise ValueError(f"unknown TTS {name!r}: use one of {', '.join(TTS_BUILDERS)} or a dotted class path")


def make_passenger_tts(speaker: Any = None) -> Any:
    """The passenger's TTS under a speaker-side condition (``voice.conditions.SpeakerSettings``):
    its voice, or the configured TTS, at its rate. None or default settings: the configured TTS."""
    if speaker is None:
        return make_tts()
    return make_tts(speaker.voice, rate=speaker.rate)


def passenger_tts_name(speaker: Any = None) -> str:
    """What the passenger speaks with, for run records ("piper", "espeak@1.3")."""
    name = (speaker.voice if speaker is not None and speaker.voice else None) or active_tts()
    rate = speaker.rate if speaker is not None else 1.0
    return name if rate == 1.0 else f"{name}@{rate:g}"


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
