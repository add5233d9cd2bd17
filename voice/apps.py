"""Conversation runtime app: bridge, peers, bots, speech."""
from __future__ import annotations

from django.apps import AppConfig


class VoiceConfig(AppConfig):
    name = "voice"
    default_auto_field = "django.db.models.BigAutoField"
