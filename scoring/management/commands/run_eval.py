"""``manage.py run_eval``: evaluate an agent on the benchmark (harness.md §19)."""
from __future__ import annotations

import asyncio
import sys
from typing import NoReturn

from django.core.checks import Tags
from django.core.management.base import BaseCommand, CommandParser

from scenarios.listing import format_domain_list, format_scenario_list
from scenarios.registry import list_eval_scenarios
from scoring.runs.finish import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_USAGE, finish_report, open_baseline
from scoring.runs.interrupt import until_interrupted
from scoring.runs.options import OptionsError, add_run_arguments, explicit_options, options_from_mapping
from scoring.runs.options.entry import executor_of, prepare
from scoring.runs.progress import TerminalProgress
from scoring.runs.executors import forked
from scoring.runs.executors.base import RunCancelled
from scoring.runs.runner import RunError, run_evaluation
from voice.bridge.outcome import SessionSetupError


class Command(BaseCommand):
    help = "Run the evaluation (default: every scenario, built-in offline models, voice modality)."
    # The project's own checks and the models'; not the URL checks, which import every view (the
    # WebRTC stack included) for a command that serves no page: a third of a text run's start.
    requires_system_checks = ["scenarios", "scoring", "voice", Tags.models]

    def add_arguments(self, parser: CommandParser) -> None:
        add_run_arguments(parser)

    def handle(self, *args, **values) -> None:
        if values["list"]:
            self.stdout.write(format_scenario_list(list_eval_scenarios()))
            return
        if values["list_domains"]:
            self.stdout.write(format_domain_list(list_eval_scenarios()))
            return
        options = options_from_mapping(values)
        try:
            adopted = prepare(options, explicit=explicit_options(values), forkable=forked.can_fork())
        except OptionsError as exc:
            self.stderr.write(f"run_eval: error: {exc}")
            sys.exit(EXIT_USAGE)
        if adopted is not None:
            self.stdout.write("\n".join(adopted.lines(options.resume)))
        try:
            baseline = open_baseline(options)  # a wrong --baseline fails now, not after the run
            if executor_of(options) == "local" and not options.user_url:
                forked.prefork(min(options.processes, options.concurrency))
            report = asyncio.run(until_interrupted(
                run_evaluation(options, argv=sys.argv, progress=TerminalProgress(sys.stdout))
            ))
        except RunCancelled as exc:  # from the site, through another process: as if Ctrl-C
            self._fail(str(exc), EXIT_INTERRUPTED)
        except (RunError, SessionSetupError) as exc:
            # An operator's problem (an unreachable URL, a bot that cannot be set up): one line.
            self._fail(str(exc))
        except KeyboardInterrupt:
            self._fail("interrupted; continue it with `run_eval --resume <TS>` (eval_<TS> is the session "
                       "printed at the start; its settings are reused)", EXIT_INTERRUPTED)
        finally:
            forked.release_spares()  # the workers this run did not need
        for warning in report.warnings:
            self.stderr.write(warning)
        self.stdout.write(f"Results: {report.session_dir}")
        done = finish_report(report, options, baseline=baseline)
        for line in done.lines:
            self.stdout.write(line)
        for notice in done.notices:
            self.stderr.write(notice)
        if done.exit_code:
            sys.exit(done.exit_code)

    def _fail(self, message: str, code: int = EXIT_ERROR) -> NoReturn:
        self.stderr.write(f"run_eval: error: {message}")
        sys.exit(code)
