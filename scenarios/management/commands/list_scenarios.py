"""``manage.py list_scenarios``: print the registry as ``run_eval --list`` (or ``--list-domains``) does."""
from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from scenarios.listing import format_domain_list, format_scenario_list
from scenarios.registry import list_eval_scenarios


class Command(BaseCommand):
    help = "List registered scenarios grouped by domain."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--domains", action="store_true", help="List domains with scenario counts instead.")

    def handle(self, *args: Any, **options: Any) -> None:
        names = list_eval_scenarios()
        if not names:
            raise CommandError("No scenarios are registered (run `manage.py check` for data-root problems).")
        formatter = format_domain_list if options["domains"] else format_scenario_list
        self.stdout.write(formatter(names))
