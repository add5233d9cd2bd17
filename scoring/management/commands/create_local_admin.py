"""``manage.py create_local_admin``: the site's first login (run by scripts/setup.sh; idempotent)."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from scoring.web.local_admin import USERNAME, ensure_local_admin


class Command(BaseCommand):
    help = "Create the local admin user once, with a generated password stored in .admin_password."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--password-file", default=str(Path(settings.BASE_DIR) / ".admin_password"))
        parser.add_argument("--username", default=USERNAME)

    def handle(self, *args, **options) -> None:
        path = Path(options["password_file"])
        password = ensure_local_admin(path, options["username"])
        if password is None:
            self.stdout.write(f"User {options['username']!r} already exists (its generated password, if any, "
                              f"is in {path}).")
            return
        self.stdout.write(f"Created the local admin. Log in at /accounts/login/ as {options['username']!r} "
                          f"with password: {password}\n(also stored in {path}, readable only by you)")
