"""How one attempt of a scenario is named: its directory, its label in the run files, its key on
the pages. One rule, used by the runner, the executors, the summary, the gate and the pages."""
from __future__ import annotations

import re

TRIAL_INFIX = "__trial"
_TRIAL_SUFFIX = re.compile(rf"{TRIAL_INFIX}(\d+)$")


def attempt_name(scenario_name: str, trial: int | None = None, trials: int = 1) -> str:
    """``<scenario>`` for a single-trial run, ``<scenario>__trial<k>`` with ``--trials`` > 1."""
    if trial is None or trials <= 1:
        return scenario_name
    return f"{scenario_name}{TRIAL_INFIX}{trial}"


def split_attempt_name(name: str) -> tuple[str, int | None]:
    """``(scenario, trial)`` of an attempt name; the trial is None without a suffix."""
    suffix = _TRIAL_SUFFIX.search(name)
    return (name[: suffix.start()], int(suffix.group(1))) if suffix else (name, None)


def has_trial_suffix(name: str) -> bool:
    return split_attempt_name(name)[1] is not None


def scenario_of(name: str) -> str:
    """The scenario an attempt name belongs to (``<scenario>__trial<k>`` -> ``<scenario>``)."""
    return split_attempt_name(name)[0]
