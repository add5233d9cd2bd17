"""The command line equivalent to a set of options, recorded in ``run_args.json`` for runs that
did not come from a shell (the site, a human call), as the command line records ``sys.argv``."""
from __future__ import annotations

from collections.abc import Sequence

from scoring.runs.options.redaction import REDACTED
from scoring.runs.options.schema import RunOptions, default_of, flag_of, option_fields


def options_argv(options: RunOptions, program: Sequence[str] = ("manage.py", "run_eval")) -> list[str]:
    """``program`` followed by every flag whose value differs from its default."""
    argv = list(program)
    for item, spec in option_fields():
        value = getattr(options, item.name)
        if value is None or value is False or value == default_of(item):
            continue
        flag = flag_of(item.name)
        if value is True:
            argv.append(flag)
        elif isinstance(value, list):
            argv += [flag, *map(str, value)]
        else:
            argv += [flag, REDACTED if spec.secret else str(value)]
    return argv
