"""Replaying a tool-call list on a scenario's initial database (issue: gold replay).

Pure except for the catalogue lookups: used by ``manage.py replay_calls`` and the gold tests.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scenarios.data_root import expected_db, initial_db
from scenarios.domains.eva_airline.tools import ToolSession, execute_tool, result_status
from scoring.core.canonical import db_hash
from scoring.core.db_diff import gold_diff


class CallsFileError(ValueError):
    """The calls file is unreadable or not of the form {"calls": [{"tool", "params"}, ...]}."""


@dataclass(frozen=True)
class ReplayResult:
    scenario: str
    initial_hash: str
    final_hash: str
    expected_hash: str
    results: list[dict[str, Any]]
    diff: dict[str, Any]

    @property
    def match(self) -> bool:
        return self.final_hash == self.expected_hash

    def as_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "initial_hash": self.initial_hash,
            "final_hash": self.final_hash,
            "expected_hash": self.expected_hash,
            "match": self.match,
            "results": self.results,
            "diff": self.diff,
        }


def load_calls_file(path: Path) -> list[dict[str, Any]]:
    """Read and shape-check a calls file; each call keeps its raw ``params`` for the executor."""
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CallsFileError(f"cannot read calls file {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise CallsFileError(f"calls file {path} is not valid JSON: {exc}") from exc
    return validate_calls(payload, source=str(path))


def validate_calls(payload: Any, *, source: str = "calls") -> list[dict[str, Any]]:
    """Check the ``{"calls": [...]}`` envelope; individual params are judged by the tools."""
    if not isinstance(payload, dict) or not isinstance(payload.get("calls"), list):
        raise CallsFileError(f'{source} must be a JSON object {{"calls": [...]}}')
    calls = payload["calls"]
    for index, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("tool"), str):
            raise CallsFileError(f'{source}: call #{index} must be an object with a string "tool"')
    return calls


def replay_calls(eva_id: str, scenario_name: str, calls: list[dict[str, Any]]) -> ReplayResult:
    """Run ``calls`` in order on a fresh copy of the scenario database and compare with gold."""
    session = ToolSession(initial_db(eva_id))
    initial_hash = db_hash(session.db)
    results = []
    for call in calls:
        params = call.get("params", {})
        if isinstance(params, dict):
            status, error_type = result_status(execute_tool(session, call["tool"], params))
        else:
            # The file format says params is an object; anything else never reaches a tool.
            status, error_type = "error", "invalid_parameter"
        results.append({"tool": call["tool"], "status": status, "error_type": error_type})
    gold = expected_db(eva_id)
    final_hash = db_hash(session.db)
    expected_hash = db_hash(gold)
    diff = {} if final_hash == expected_hash else gold_diff(gold, session.db)
    return ReplayResult(scenario_name, initial_hash, final_hash, expected_hash, results, diff)
