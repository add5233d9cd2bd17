"""Conversation runtime app: bridge, peers, bots, speech."""
from __future__ import annotations

import sys

from django.apps import AppConfig
from django.conf import settings


class VoiceConfig(AppConfig):
    name = "voice"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core import checks

        from voice.checks import check_speech

        checks.register(check_speech, "voice")
        # pipecat logs through loguru at DEBUG by default; that floods terminals and can fill
        # undrained pipes (stack-notes gotcha 8). Keep only what the operator asked for.
        from loguru import logger

        logger.remove()
        logger.add(sys.stderr, level=getattr(settings, "EVASITE_PIPECAT_LOG_LEVEL", "WARNING"))
