"""``manage.py replay_calls``: replay a tool-call list on a scenario and compare with gold."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser

from scenarios.domains.eva_airline.gold import gold_calls
from scenarios.registry import list_eval_scenarios, resolve_scenario
from scoring.core.replay import CallsFileError, load_calls_file, replay_calls


class Command(BaseCommand):
    help = "Replay a tool-call list on a scenario's initial database and compare its hash with gold."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--scenario", required=True, help="Registered name, eva id (1.1.2) or 'all'.")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--calls", type=Path, help='JSON file {"calls": [{"tool", "params"}, ...]}.')
        source.add_argument("--gold", action="store_true", help="Replay the project's gold call list.")

    def handle(self, *args, **options) -> None:
        try:
            if options["scenario"] == "all":
                if not options["gold"]:
                    self._fail("--scenario all needs --gold")
                self._replay_all()
                return
            scenario = resolve_scenario(options["scenario"])
            calls = gold_calls(scenario.eva_id) if options["gold"] else load_calls_file(options["calls"])
        except (LookupError, CallsFileError) as exc:
            self._fail(str(exc).strip("'\""))
        result = replay_calls(scenario.eva_id, scenario.name, calls)
        self.stdout.write(json.dumps(result.as_dict()))

    def _replay_all(self) -> None:
        matched = 0
        names = list_eval_scenarios()
        for name in names:
            scenario = resolve_scenario(name)
            result = replay_calls(scenario.eva_id, scenario.name, gold_calls(scenario.eva_id))
            matched += result.match
            self.stdout.write(json.dumps(result.as_dict()))
        self.stdout.write(f"{matched}/{len(names)} matched")

    def _fail(self, message: str) -> None:
        # Exit 2 with a one-line error, as the issue asks (CommandError would exit 1).
        self.stderr.write(f"replay_calls: error: {message}")
        sys.exit(2)
