"""Scoring, runs and results app."""
from __future__ import annotations

from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "scoring"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Server start-up: the first request a process serves marks runs whose coordinating
        # process died as interrupted (no database access during app loading itself).
        from django.core.signals import request_started

        from scoring.web.recovery import recover_once

        request_started.connect(recover_once, dispatch_uid="scoring.recover_orphaned_runs")

        from django.core import checks

        from scoring.checks import check_celery_storage

        checks.register(check_celery_storage, "scoring")
