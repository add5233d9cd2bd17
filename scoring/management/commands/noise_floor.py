"""``manage.py noise_floor <run>``: how much a pass rate moves between runs with nothing changed.

Read from a run with ``--trials`` ≥ 2: the figure to know before trusting a difference between
two runs (or a leaderboard gap)."""
from __future__ import annotations

import sys
from typing import NoReturn

from django.core.management.base import BaseCommand, CommandParser

from scoring.core.gate_report import RunFigures, noise_floor_text
from scoring.runs.baseline import RunNotFound, load_run


class Command(BaseCommand):
    help = "Print the run-to-run spread of a run's pass rate, from its repeated trials."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", help="Run id, timestamp (YYYYMMDD_HHMMSS) or session directory.")
        parser.add_argument("--output-dir", default="./eval_results",
                            help="Where eval_<timestamp> directories are looked up (default ./eval_results).")

    def handle(self, *args, **options) -> None:
        try:
            stored = load_run(options["run"], output_dir=options["output_dir"])
        except RunNotFound as exc:
            self._fail(str(exc))
        figures = RunFigures.from_metrics(stored.label, stored.metrics, min_agent_turns=stored.min_agent_turns)
        try:
            self.stdout.write(noise_floor_text(figures), ending="")
        except ValueError:
            self._fail(f"{stored.label} has one trial per scenario; the noise floor needs repeated trials "
                       "(run_eval --trials 3 or more)")

    def _fail(self, message: str) -> NoReturn:
        self.stderr.write(f"noise_floor: error: {message}")
        sys.exit(1)
