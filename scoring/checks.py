"""System checks for the scale-out storage: with ``EVASITE_EXECUTOR=celery`` the rows must live in
PostgreSQL, the broker must be configured, and the output directory must be one path every
worker sees (``manage.py check`` says so before a run is started)."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core import checks
from django.db import connection


def check_celery_storage(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    if getattr(settings, "EVASITE_EXECUTOR", "local") != "celery":
        return []
    from scoring.runs.executors.celery_queue import storage_problems

    messages: list[checks.CheckMessage] = [
        checks.Error(problem, id="scoring.E001")
        for problem in storage_problems(database_vendor=connection.vendor, redis_url=settings.REDIS_URL)
    ]
    output_dir = Path(settings.EVASITE_OUTPUT_DIR)
    if not output_dir.is_absolute():
        messages.append(checks.Warning(
            f"EVASITE_OUTPUT_DIR={settings.EVASITE_OUTPUT_DIR!r} is relative: with the celery executor the output "
            "directory must be the same path on every worker (one machine, or a shared filesystem mounted alike)",
            hint="Set EVASITE_OUTPUT_DIR (and --output-dir) to an absolute path on the shared filesystem.",
            id="scoring.W001"))
    return messages
