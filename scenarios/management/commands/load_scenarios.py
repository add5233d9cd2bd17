"""``manage.py load_scenarios``: refresh the ``Scenario`` mirror from the registry."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils.module_loading import import_string

from scenarios.data_root import DataRootError
from scenarios.services import scenario_mirror_sync


class Command(BaseCommand):
    help = "Mirror the registered scenarios into the database (create, update, delete stale rows)."

    def handle(self, *args: Any, **options: Any) -> None:
        # The hash comes from the configured hasher, so this room never imports scoring.
        db_hash = import_string(settings.EVASITE_DB_HASHER)
        try:
            counts = scenario_mirror_sync(hash_fn=db_hash)
        except (DataRootError, ValueError, KeyError) as exc:
            raise CommandError(f"cannot load scenarios: {exc}") from exc
        self.stdout.write(
            f"Scenarios: {counts['created']} created, {counts['updated']} updated, "
            f"{counts['deleted']} deleted, {counts['unchanged']} unchanged."
        )
