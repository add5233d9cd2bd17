"""What speech stack a voice run used, for run_args.json and metadata.json (so a figure can be
traced to the exact model file: name plus sha256 of its weights)."""
from __future__ import annotations

from typing import Any, Optional

from voice.speech import registry
from voice.speech.whisper_models import ModelMissing, locate, sha256_of


def speech_description(tts: Optional[str] = None, stt: Optional[str] = None) -> dict[str, Any]:
    """``{"tts": name, "stt": name, "stt_model": ..., "stt_model_sha256": ...}``; the model keys
    are present for Whisper only (null when its wheel is missing)."""
    tts = tts or registry.active_tts()
    stt = stt or registry.active_stt()
    described: dict[str, Any] = {"tts": tts, "stt": stt}
    model_name = registry.WHISPER_MODELS.get(stt)
    if model_name:
        described["stt_model"] = model_name
        try:
            described["stt_model_sha256"] = sha256_of(locate(model_name).model_bin)
        except ModelMissing:
            described["stt_model_sha256"] = None
    return described
