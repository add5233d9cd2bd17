"""Writes for the scenario app: keep the ``Scenario`` mirror equal to the registry."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction

from scenarios import data_root, registry
from scenarios.contract import EvalScenario
from scenarios.models import Scenario

HashFn = Callable[[Any], str]
MIRRORED_FIELDS = (
    "eva_id",
    "domain",
    "description",
    "max_duration",
    "success_signals",
    "expected_db_hash",
    "initial_db_hash",
    "user_prompt",
    "agent_prompt",
    "is_seed",
    "position",
)


def scenario_mirror_row(scenario: EvalScenario, *, position: int, hash_fn: HashFn) -> dict[str, Any]:
    """The mirrored field values of one registered scenario."""
    expected = scenario.expected_scenario_db
    initial = getattr(scenario, "scenario_db", None)
    return {
        "eva_id": getattr(scenario, "eva_id", "") or "",
        "domain": scenario.domain,
        "description": scenario.description or "",
        "max_duration": int(scenario.max_duration) if scenario.max_duration is not None else None,
        "success_signals": list(scenario.success_signals or ()),
        "expected_db_hash": hash_fn(expected) if expected is not None else "",
        "initial_db_hash": hash_fn(initial) if initial is not None else "",
        "user_prompt": scenario.get_user_prompt(),
        "agent_prompt": scenario.get_agent_prompt(),
        "is_seed": bool(getattr(scenario, "is_seed", False)),
        "position": position,
    }


def scenario_mirror_sync(*, hash_fn: HashFn) -> dict[str, int]:
    """Create, update and delete ``Scenario`` rows so they mirror the registry; idempotent.
    ``hash_fn`` is the canonical DB hash (scenarios never import scoring: the caller passes it).

    Raises ``DataRootError`` (before touching any row) when the fixture directory is unusable, so a
    broken data root never wipes the mirror. Returns counts: created, updated, deleted, unchanged.
    """
    problems = data_root.data_root_problems()
    if problems:
        raise data_root.DataRootError("; ".join(problems))
    names = registry.list_eval_scenarios()
    rows = {}
    for position, name in enumerate(names):
        scenario = registry.get_eval_scenario(name)
        assert scenario is not None  # listed names always resolve
        rows[name] = scenario_mirror_row(scenario, position=position, hash_fn=hash_fn)

    counts = {"created": 0, "updated": 0, "deleted": 0, "unchanged": 0}
    with transaction.atomic():
        existing = {row.name: row for row in Scenario.objects.select_for_update()}
        for name, values in rows.items():
            row = existing.get(name)
            if row is None:
                Scenario.objects.create(name=name, **values)
                counts["created"] += 1
            elif any(getattr(row, field) != values[field] for field in MIRRORED_FIELDS):
                for field, value in values.items():
                    setattr(row, field, value)
                row.save()
                counts["updated"] += 1
            else:
                counts["unchanged"] += 1
        stale = [name for name in existing if name not in rows]
        if stale:
            counts["deleted"], _ = Scenario.objects.filter(name__in=stale).delete()
    return counts
