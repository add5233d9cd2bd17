"""``manage.py check`` reports a speech stack that cannot work."""
from __future__ import annotations

import shutil

from voice import checks as voice_checks


def test_installed_stack_passes() -> None:
    ids = [message.id for message in voice_checks.check_speech()]
    assert ids == ([] if shutil.which("espeak-ng") else ["voice.W001"])


def test_missing_voice_stt_and_espeak_are_reported(monkeypatch, settings) -> None:
    monkeypatch.setattr(voice_checks, "_package_dir", lambda name: None)
    monkeypatch.setattr(voice_checks.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(voice_checks.shutil, "which", lambda name: None)
    ids = [message.id for message in voice_checks.check_speech()]
    assert ids == ["voice.E001", "voice.E002", "voice.W001"]
    settings.EVASITE_TTS = "espeak"
    assert [m.id for m in voice_checks.check_speech()] == ["voice.E002", "voice.W001"]
