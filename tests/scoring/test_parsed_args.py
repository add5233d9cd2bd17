"""``parsed_args`` (run_args.json, the Run row) records every run_eval flag (harness.md §14.8)."""
from __future__ import annotations

from django.core.management import load_command_class
from django.core.management.base import BaseCommand

from scoring.runs.options import RunOptions, options_from_mapping

LISTING_FLAGS = {"list", "list_domains"}  # print and exit; never part of a run


def _dests(parser) -> set[str]:
    return {action.dest for action in parser._actions if action.dest != "help"}


def test_every_run_eval_flag_is_recorded_with_its_value() -> None:
    parser = load_command_class("scoring", "run_eval").create_parser("manage.py", "run_eval")
    django_common = _dests(BaseCommand().create_parser("manage.py", "base"))
    harness_flags = _dests(parser) - django_common - LISTING_FLAGS
    values = vars(parser.parse_args(["--modality", "text", "--trials", "3", "--judge-api-key", "sk-x",
                                     "--agent-url", "ws://u:p@127.0.0.1:1/?token=t"]))
    recorded = options_from_mapping(values).redacted()
    assert set(recorded) == harness_flags
    assert recorded["modality"] == "text" and recorded["trials"] == 3
    assert recorded["judge_api_key"] == "<redacted>" and "p@" not in recorded["agent_url"]
    assert set(RunOptions().redacted()) == harness_flags
