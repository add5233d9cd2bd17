"""Writes for runs and results (one place per concern). Called from the runner and the workers
through ``sync_to_async``; every function is a short atomic transaction."""
from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

from django.db import InterfaceError, OperationalError, connection, transaction
from django.utils import timezone

from scoring.models import Run, ScenarioResult


T = TypeVar("T")
DB_RETRY_SECONDS = 60.0
logger = logging.getLogger(__name__)


def _bool_or_none(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def retrying(write: Callable[[], T], *, within: float = DB_RETRY_SECONDS) -> T:
    """Run an atomic ``write`` again while the database is briefly unreachable (a restart, a
    fail-over). Each try is its own transaction, so a failed one leaves nothing behind. Inside an
    outer transaction there is nothing safe to retry, so the error is raised at once."""
    delay, deadline = 0.2, time.monotonic() + within
    while True:
        try:
            return write()
        except (OperationalError, InterfaceError) as exc:
            if connection.in_atomic_block or time.monotonic() >= deadline:
                raise
            logger.warning("database unavailable (%s); retrying the write in %.1fs", str(exc).strip(), delay)
            try:
                connection.close()  # a broken connection is reopened on the next query
            except Exception:
                pass
            time.sleep(delay)
            delay = min(delay * 2, 2.0)


@transaction.atomic
def run_open(
    *,
    session_dir: Path,
    timestamp: str,
    parsed_args: dict[str, Any],
    scenario_names: list[str],
    total_scenarios: int,
    source: str = Run.Source.CLI,
    owner_id: int | None = None,
) -> Run:
    """Create the run row, or reopen it on ``--resume`` (same session directory, same row).

    The coordinating process (host, pid, a first heartbeat) is recorded so a server can tell a
    run whose process died from one still going in another process (``scoring.runs.liveness``).
    A resume keeps the original owner unless one is given."""
    owner = {"owner_id": owner_id} if owner_id is not None else {}
    run, _ = Run.objects.update_or_create(
        session_dir=str(Path(session_dir).resolve()),
        defaults={
            **owner,
            "coordinator_host": socket.gethostname(),
            "coordinator_pid": os.getpid(),
            "coordinator_seen_at": timezone.now(),
            "timestamp": timestamp,
            "status": Run.Status.RUNNING,
            "source": source,
            "executor": parsed_args.get("executor") or "local",
            "domain": parsed_args.get("domain") or "",
            "modality": parsed_args.get("modality") or "",
            "agent_model": parsed_args.get("agent_model") or "",
            "user_model": parsed_args.get("user_model") or "",
            "trials": parsed_args.get("trials") or 1,
            "scenario_names": scenario_names,
            "parsed_args": parsed_args,
            "total_scenarios": total_scenarios,
            "finished_at": None,
            "error": "",
            "summary_text": "",
            "success_rate": None,
        },
    )
    return run


def run_heartbeat(*, run_id: int) -> bool:
    """Stamp that this process still coordinates the run (``scoring.runs.liveness``). Only the
    recorded coordinator stamps, and only while the run is running: a process that lost the run
    to a resume elsewhere never makes it look alive again. False when nothing was stamped."""
    return bool(Run.objects.filter(
        pk=run_id, status=Run.Status.RUNNING, coordinator_host=socket.gethostname(), coordinator_pid=os.getpid(),
    ).update(coordinator_seen_at=timezone.now()))


def scenario_result_record(
    *,
    run_id: int,
    metrics: dict[str, Any],
    position: int,
    trial: int,
    final_db: dict[str, Any] | None,
    condition: str = "",
) -> ScenarioResult:
    """Insert or replace the accepted result of one scenario trial (under one condition):
    idempotent (a resume, or a task delivered twice, keeps one row per run, scenario, trial and
    condition) and retried while the database is briefly away."""
    return retrying(lambda: _record_result(run_id=run_id, metrics=metrics, position=position, trial=trial,
                                           final_db=final_db, condition=condition))


@transaction.atomic
def _record_result(*, run_id: int, metrics: dict[str, Any], position: int, trial: int,
                   final_db: dict[str, Any] | None, condition: str) -> ScenarioResult:
    result, _ = ScenarioResult.objects.update_or_create(
        run_id=run_id,
        scenario_name=metrics["scenario_name"],
        trial=trial,
        condition=condition,
        defaults={
            "position": position,
            "directory": metrics.get("scenario_directory", ""),
            "metrics": metrics,
            "is_successful": _bool_or_none(metrics.get("is_successful")),
            "is_task_successful": _bool_or_none(metrics.get("is_task_successful")),
            "db_state_match": _bool_or_none(metrics.get("db_state_match")),
            "clean_exit": _bool_or_none(metrics.get("clean_exit")),
            "insufficient_agent_turns": bool(metrics.get("insufficient_agent_turns")),
            "stop_reason": metrics.get("stop_reason") or "",
            "total_turns": metrics.get("total_turns") or 0,
            "scenario_duration": metrics.get("scenario_duration") or 0.0,
            "auto_retry_count": metrics.get("auto_retry_count") or 0,
            "judge_score": metrics.get("judge_score") if isinstance(metrics.get("judge_score"), (int, float)) else None,
            "final_db_json": json.dumps(final_db) if final_db is not None else "",
        },
    )
    _refresh_counts(run_id)
    return result


def _refresh_counts(run_id: int) -> None:
    results = ScenarioResult.objects.filter(run_id=run_id)
    Run.objects.filter(pk=run_id).update(
        completed_scenarios=results.count(),
        successful_scenarios=results.filter(is_successful=True).count(),
        updated_at=timezone.now(),
    )


def scenario_results_discard(*, run_id: int, keys: list[tuple[str, int, str]]) -> int:
    """Delete the rows of scenarios about to be dispatched again (their directories hold no
    completed attempt), so the coordinator waits for the new result, not a stale one."""
    return retrying(lambda: _delete_results(run_id=run_id, keys=set(keys), keep=False))


def run_prune_results(*, run_id: int, keep: list[tuple[str, int, str]]) -> int:
    """Delete the run's results that are not in the current queue (a resume with a narrower
    selection), so rows and ``all_metrics.json`` describe the same scenarios."""
    return retrying(lambda: _delete_results(run_id=run_id, keys=set(keep), keep=True))


@transaction.atomic
def _delete_results(*, run_id: int, keys: set[tuple[str, int, str]], keep: bool) -> int:
    """Delete the run's rows whose (scenario, trial, condition) is in ``keys`` (``keep``: is not in them)."""
    stale = [r.pk for r in ScenarioResult.objects.filter(run_id=run_id) if (r.key in keys) != keep]
    ScenarioResult.objects.filter(pk__in=stale).delete()
    _refresh_counts(run_id)
    return len(stale)


def run_close(
    *, run_id: int, status: str, summary_text: str = "", success_rate: float | None = None, error: str = ""
) -> None:
    """Record how the run ended and its summary; retried while the database is briefly away, so
    a run that finished is not left "running" by a blip at its very end."""
    retrying(lambda: _close(run_id=run_id, status=status, summary_text=summary_text, success_rate=success_rate,
                            error=error))


@transaction.atomic
def _close(*, run_id: int, status: str, summary_text: str, success_rate: float | None, error: str) -> None:
    Run.objects.filter(pk=run_id).update(
        status=status,
        summary_text=summary_text,
        success_rate=success_rate,
        error=error,
        finished_at=timezone.now(),
    )
