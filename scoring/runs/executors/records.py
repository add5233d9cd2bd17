"""Reads of the rows workers write (the coordinator's view of a run's progress)."""
from __future__ import annotations

from django.db import DatabaseError, connection

from scoring.models import ScenarioResult


def recorded_keys(*, run_id: int) -> set[tuple[str, int]] | None:
    """``(scenario_name, trial)`` of every result row of the run; None while the database is
    unreachable (the broken connection is dropped, so the next poll reconnects)."""
    try:
        return set(ScenarioResult.objects.filter(run_id=run_id).values_list("scenario_name", "trial"))
    except DatabaseError:
        try:
            connection.close()
        except Exception:
            pass
        return None
