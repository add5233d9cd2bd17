"""Reads of the rows workers write (the coordinator's fallback view of a run's progress). Each
returns None while the database is unreachable (the broken connection is dropped, so the next
read reconnects)."""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.db import DatabaseError, connection

from scoring.models import ScenarioResult

T = TypeVar("T")


def _or_none(read: Callable[[], T]) -> T | None:
    try:
        return read()
    except DatabaseError:
        try:
            connection.close()
        except Exception:
            pass
        return None


def recorded_keys(*, run_id: int) -> set[tuple[str, int, str]] | None:
    """``(scenario_name, trial, condition)`` of every result row of the run."""
    return _or_none(lambda: set(ScenarioResult.objects.filter(run_id=run_id)
                                .values_list("scenario_name", "trial", "condition")))


def result_recorded(*, run_id: int, key: tuple[str, int, str]) -> bool | None:
    """Whether the run has a row for ``(scenario_name, trial, condition)``."""
    name, trial, condition = key
    return _or_none(lambda: ScenarioResult.objects.filter(run_id=run_id, scenario_name=name, trial=trial,
                                                          condition=condition).exists())
