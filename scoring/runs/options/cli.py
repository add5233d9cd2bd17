"""The ``run_eval`` flags, generated from the declarations, and the options a command line gave.

Every run option is declared with ``default=SUPPRESS`` so the parsed values say which flags were
actually typed: ``--resume`` fills only the others from the run's recorded invocation."""
from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from scoring.runs.options.schema import RunOptions, default_of, flag_of, option_fields

_PARSERS = {int: int, float: float}


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare every run option on ``parser`` (plus ``--list`` / ``--list-domains``)."""
    parser.add_argument("--list", action="store_true", help="List registered scenarios by domain and exit.")
    parser.add_argument("--list-domains", action="store_true", help="List domains and exit.")
    for item, spec in option_fields():
        default = default_of(item)
        shown = f" (default: {default})" if default not in (None, [], False, "") else ""
        kwargs: dict[str, Any] = {"dest": item.name, "default": argparse.SUPPRESS, "help": spec.help + shown}
        if spec.kind is bool:
            kwargs["action"] = "store_true"
        elif spec.kind is list:
            kwargs.update(nargs="+", metavar=spec.metavar or "NAME")
        else:
            kwargs.update(type=_PARSERS.get(spec.kind, str), metavar=spec.metavar)
        parser.add_argument(flag_of(item.name), **kwargs)


def options_from_mapping(values: Mapping[str, Any]) -> RunOptions:
    """Options from parsed flags or a stored record; keys that are not options are ignored and
    missing ones keep their defaults."""
    known = {item.name for item, _ in option_fields()}
    options = RunOptions(**{key: value for key, value in values.items() if key in known})
    options.scenarios = list(options.scenarios or [])
    return options


def explicit_options(values: Mapping[str, Any]) -> set[str]:
    """The option names a command line typed (the others were suppressed by the parser)."""
    known = {item.name for item, _ in option_fields()}
    return {key for key in values if key in known}
