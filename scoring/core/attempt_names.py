"""How one attempt of a scenario is named: its directory, its label in the run files, its key on
the pages. One rule, used by the runner, the executors, the summary, the gate and the pages.

``<scenario>[__cond-<condition>][__trial<k>]``: the condition part appears when the run was
given ``--conditions`` (its directory-safe name, ``[a-z0-9.+-]``), the trial part with
``--trials`` > 1. Both are read from the right, so scenario names may hold ``__`` themselves."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

TRIAL_INFIX = "__trial"
CONDITION_INFIX = "__cond-"
CLEAN = "clean"
_TRIAL_SUFFIX = re.compile(rf"{TRIAL_INFIX}(\d+)$")
_CONDITION_SUFFIX = re.compile(rf"{CONDITION_INFIX}([a-z0-9.+-]+)$")


def attempt_name(scenario_name: str, trial: int | None = None, trials: int = 1, condition: str = "") -> str:
    """``<scenario>`` for a single-trial run, ``<scenario>__trial<k>`` with ``--trials`` > 1,
    with ``__cond-<condition>`` before the trial when the run has conditions."""
    name = f"{scenario_name}{CONDITION_INFIX}{condition}" if condition else scenario_name
    if trial is None or trials <= 1:
        return name
    return f"{name}{TRIAL_INFIX}{trial}"


def split_attempt_name(name: str) -> tuple[str, int | None]:
    """``(scenario and condition, trial)`` of an attempt name; the trial is None without a suffix."""
    suffix = _TRIAL_SUFFIX.search(name)
    return (name[: suffix.start()], int(suffix.group(1))) if suffix else (name, None)


def split_condition(name: str) -> tuple[str, str]:
    """``(scenario, condition)`` of an attempt name without its trial part ("" without one)."""
    suffix = _CONDITION_SUFFIX.search(name)
    return (name[: suffix.start()], suffix.group(1)) if suffix else (name, "")


def has_trial_suffix(name: str) -> bool:
    return split_attempt_name(name)[1] is not None


def scenario_of(name: str) -> str:
    """The scenario an attempt name belongs to (``<scenario>__cond-phone__trial<k>`` -> ``<scenario>``)."""
    return split_condition(split_attempt_name(name)[0])[0]


def condition_of(name: str) -> str:
    """The condition part of an attempt name ("" for a run without conditions)."""
    return split_condition(split_attempt_name(name)[0])[1]


def comparable_name(scenario_name: str, condition: str) -> str:
    """What the gate and the compare page pair attempts by: the scenario, and its condition
    unless clean, so a clean attempt of a conditions run pairs with a plain run's attempt."""
    return scenario_name if condition in ("", CLEAN) else f"{scenario_name}{CONDITION_INFIX}{condition}"


def recorded_condition(metrics: Mapping[str, Any]) -> str:
    """The condition an attempt's metrics record ("" when its run had no ``--conditions``)."""
    condition = metrics.get("condition")
    return condition if isinstance(condition, str) else ""
