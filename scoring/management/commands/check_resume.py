"""``manage.py check_resume``: read-only preview of what ``--resume`` would do (harness.md §18)."""
from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser

from scoring.core.resume import check_resume_report


class Command(BaseCommand):
    help = "Show which scenarios of a run directory are complete and which --resume would re-run."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("eval_dir", type=Path, help="Session directory eval_<timestamp>.")
        parser.add_argument("--min-agent-turns", type=int, default=0,
                            help="Stall floor to classify with (pass the value you will resume with).")

    def handle(self, *args, **options) -> None:
        eval_dir: Path = options["eval_dir"]
        if not eval_dir.is_dir():
            self.stderr.write(f"check_resume: error: {eval_dir} is not a directory")
            sys.exit(1)
        self.stdout.write(check_resume_report(eval_dir, options["min_agent_turns"]), ending="")
