"""``--conditions`` read once: the run's conditions in order, and the rules a run with them must
keep (checked by ``validate`` for the command line, the form and a resume alike)."""
from __future__ import annotations

from functools import lru_cache

from voice.conditions import Condition, ConditionSpecError, parse_conditions
from voice.conditions.spec import SPEAKER_KINDS


@lru_cache(maxsize=64)
def _parsed(text: str) -> tuple[Condition, ...]:
    return tuple(parse_conditions(text))


def run_conditions(text: str | None) -> tuple[Condition, ...]:
    """The conditions of ``--conditions`` (empty without the flag: a plain run, plain names);
    ConditionSpecError when the list cannot be used."""
    return _parsed(text) if text else ()


def condition_named(text: str | None, name: str) -> Condition | None:
    """The run's condition whose directory-safe name is ``name`` (None for "" or an unknown one)."""
    return next((condition for condition in run_conditions(text) if condition.name == name), None)


def conditions_problem(text: str | None, *, modality: str, user_url: str | None) -> str | None:
    """Why these conditions cannot run as configured (a one-line message naming the flag), or None."""
    try:
        conditions = run_conditions(text)
    except ConditionSpecError as exc:
        return f"--conditions: {exc}"
    kinds = {part.kind for condition in conditions for part in condition.parts}
    if modality != "voice" and kinds - {"clean"}:
        return "--conditions other than clean need --modality voice (text has no audio or voice to change)"
    passenger = sorted(kinds & {*SPEAKER_KINDS, "barge-in"})
    if passenger and user_url:
        return (f"--conditions: {', '.join(passenger)} change how the built-in passenger speaks; "
                "a passenger at --user-url speaks for itself")
    return None
