"""Scenario catalogue app."""
from __future__ import annotations

from django.apps import AppConfig


class ScenariosConfig(AppConfig):
    name = "scenarios"
    default_auto_field = "django.db.models.BigAutoField"
