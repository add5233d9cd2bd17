"""Scenario catalogue app."""
from __future__ import annotations

from django.apps import AppConfig


class ScenariosConfig(AppConfig):
    name = "scenarios"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Only wiring: register the data-root and registry system checks."""
        from django.core import checks

        from scenarios.checks import check_data_root, check_registry

        checks.register(check_data_root, "scenarios")
        checks.register(check_registry, "scenarios")
