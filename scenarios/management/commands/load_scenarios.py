"""``manage.py load_scenarios``: refresh the ``Scenario`` mirror from the registry."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from scenarios.data_root import DataRootError
from scenarios.services import scenario_mirror_sync


class Command(BaseCommand):
    help = "Mirror the registered scenarios into the database (create, update, delete stale rows)."

    def handle(self, *args: Any, **options: Any) -> None:
        from scoring.canonical import db_hash

        try:
            counts = scenario_mirror_sync(hash_fn=db_hash)
        except (DataRootError, ValueError, KeyError) as exc:
            raise CommandError(f"cannot load scenarios: {exc}") from exc
        self.stdout.write(
            f"Scenarios: {counts['created']} created, {counts['updated']} updated, "
            f"{counts['deleted']} deleted, {counts['unchanged']} unchanged."
        )
