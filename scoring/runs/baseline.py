"""A finished run read back, for the gate's ``--baseline`` and for ``manage.py noise_floor``.

A run is named the way people have it at hand: its timestamp (``20260101_120000`` or
``eval_20260101_120000``, looked up in the output directory, then among the rows), its row id,
or the path of its session directory (a CI artifact unpacked anywhere). The verdicts come from
the scenarios' ``metrics.json`` files, which re-scoring keeps current; when the directory is
gone (another machine), from the rows, which hold the same metrics.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scoring.core import resume as resume_rules
from scoring.core.files import read_json
from scoring.core.attempt_names import recorded_condition
from scoring.core.gate import DEFAULT_MIN_AGENT_TURNS, recorded_min_agent_turns, scenario_and_trial
from scoring.runs.executors.base import RunError

_TIMESTAMP = re.compile(r"(?:eval_)?(\d{8}_\d{6})")


class RunNotFound(RunError):
    """The named run does not exist or holds no scored scenario (exit 1)."""


@dataclass
class StoredRun:
    """A finished run's metrics and the settings its verdicts were scored with."""

    label: str
    """``eval_<TS>`` (what the reports call it)."""
    session_dir: Path | None
    run_id: int | None
    metrics: list[dict[str, Any]]
    min_agent_turns: int = DEFAULT_MIN_AGENT_TURNS
    trials: int = 1
    read_from: str = "metrics files"


def load_run(reference: str, *, output_dir: str | Path) -> StoredRun:
    """The run named by ``reference`` (timestamp, row id or session directory); RunNotFound."""
    session_dir, row = _locate(reference.strip(), Path(output_dir).expanduser())
    return _stored_run(reference, session_dir, row)


def load_run_id(run_id: int) -> StoredRun:
    """A recorded run by its row id only: the site names baselines this way, never by a path or
    a timestamp a user could steer elsewhere; RunNotFound."""
    from scoring.models import Run

    row = Run.objects.filter(pk=run_id).first()
    if row is None:
        raise RunNotFound(f"{run_id}: no such run")
    session_dir = Path(row.session_dir)
    return _stored_run(str(run_id), session_dir if session_dir.is_dir() else None, row)


def _stored_run(reference: str, session_dir: Path | None, row: Any) -> StoredRun:
    parsed_args, names = _recorded_invocation(session_dir, row)
    if session_dir is not None:
        metrics, read_from = _metrics_from_files(session_dir, names), "metrics files"
    else:
        metrics, read_from = [], "rows"
    if not metrics and row is not None:
        metrics, read_from = _metrics_from_rows(row), "rows"
    label = session_dir.name if session_dir is not None else f"eval_{row.timestamp}"
    if not metrics:
        raise RunNotFound(f"{reference}: {label} holds no scored scenario")
    trials = parsed_args.get("trials")
    return StoredRun(
        label=label,
        session_dir=session_dir,
        run_id=row.pk if row is not None else None,
        metrics=metrics,
        min_agent_turns=recorded_min_agent_turns(parsed_args),
        trials=trials if isinstance(trials, int) and trials >= 1 else 1,
        read_from=read_from,
    )


def _locate(reference: str, output_dir: Path) -> tuple[Path | None, Any]:
    """(session directory if on disk, Run row if any) for a reference; RunNotFound if neither."""
    from scoring.models import Run

    as_path = Path(reference).expanduser()
    if as_path.is_dir():
        session_dir = as_path.resolve()
        return session_dir, Run.objects.filter(session_dir=str(session_dir)).first()
    stamp = _TIMESTAMP.fullmatch(reference)
    if stamp:
        session_dir = (output_dir / f"eval_{stamp.group(1)}").resolve()
        if session_dir.is_dir():
            return session_dir, Run.objects.filter(session_dir=str(session_dir)).first()
        row = Run.objects.filter(timestamp=stamp.group(1)).order_by("-pk").first()
    elif reference.isdigit():
        row = Run.objects.filter(pk=int(reference)).first()
    else:
        raise RunNotFound(f"{reference}: not a session directory, a timestamp (YYYYMMDD_HHMMSS) or a run id")
    if row is None:
        raise RunNotFound(f"{reference}: no such run (looked in {output_dir} and among the recorded runs)")
    session_dir = Path(row.session_dir)
    return (session_dir if session_dir.is_dir() else None), row


def _recorded_invocation(session_dir: Path | None, row: Any) -> tuple[dict[str, Any], list[str]]:
    """The last invocation's flags and scenario names: ``run_args.json`` when readable, else
    the row's."""
    if session_dir is not None:
        try:
            payload = read_json(session_dir / "run_args.json")
            invocations = payload.get("invocations") if isinstance(payload, dict) else None
            if isinstance(invocations, list) and invocations and isinstance(invocations[-1], dict):
                last = invocations[-1]
                return dict(last.get("parsed_args") or {}), list(last.get("resolved_scenario_names") or [])
        except (OSError, ValueError):
            pass
    if row is not None:
        return dict(row.parsed_args or {}), list(row.scenario_names or [])
    return {}, []


def _metrics_from_files(session_dir: Path, names: list[str]) -> list[dict[str, Any]]:
    """Every completed scenario directory's metrics, in the run's queue order when recorded."""
    metrics = []
    for scenario_dir in resume_rules.scenario_dirs(session_dir):
        state, _ = resume_rules.classify(scenario_dir, 0)
        if state != resume_rules.COMPLETED:
            continue
        entry = resume_rules.read_metrics(scenario_dir)
        entry["scenario_directory"] = str(scenario_dir)  # where its agent context is now
        metrics.append(entry)
    order = {name: i for i, name in enumerate(names)}

    def queue_position(entry: dict[str, Any]) -> tuple[int, str, str, int]:
        name, trial = scenario_and_trial(entry)
        return order.get(name, len(order)), name, recorded_condition(entry), trial

    return sorted(metrics, key=queue_position)


def _metrics_from_rows(row: Any) -> list[dict[str, Any]]:
    return [dict(result.metrics) for result in row.results.order_by("position") if isinstance(result.metrics, dict)]
