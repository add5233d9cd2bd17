"""The steps ``executors.delivery`` is made of: the retry decision of harness.md §17.2,
discarding an attempt, taking over a directory a dead process left behind, reading a recorded
attempt's metrics, and recording the accepted attempt."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async

from scoring.core import resume as resume_rules
from scoring import services
from scoring.runs.attempt import AttemptOutcome
from scoring.runs.executors.base import QueueItem, RunError
from scoring.runs.options import RunOptions


def retry_decision(options: RunOptions, attempt: AttemptOutcome, scenario_dir: Path, retries: int) -> str | None:
    """Why this attempt must be discarded and run again, or None to keep it. An attempt that can
    be neither kept nor retried raises its error (the run fails)."""
    reason = resume_rules.retry_reason(
        error=attempt.error, metrics=attempt.metrics, scenario_dir=scenario_dir,
        stale_retry=not options.no_auto_resume_on_stale,
        retry_insufficient_turns=options.auto_resume_on_insufficient_turns,
        min_agent_turns=options.min_agent_turns)
    if reason is None or retries >= options.max_auto_retries:
        if attempt.metrics is None:
            raise attempt.error or RunError("attempt produced no metrics")
        return None
    return reason


def discard_attempt(scenario_dir: Path, retries: int) -> Path:
    """Move a discarded attempt aside under its auto-retry name (§17.2)."""
    return resume_rules.move_aside(scenario_dir, resume_rules.autoretry_suffix(retries, datetime.now()))


def accepted_metrics(scenario_dir: Path) -> dict[str, Any] | None:
    """The metrics of the attempt a worker accepted and recorded (None until its file is readable)."""
    try:
        metrics = resume_rules.read_metrics(scenario_dir)
    except (OSError, ValueError):
        return None
    metrics["scenario_directory"] = str(scenario_dir)
    return metrics


def completed_metrics(scenario_dir: Path, min_agent_turns: int) -> dict[str, Any] | None:
    """The metrics of a directory that already holds a completed attempt, as resume loads them."""
    state, _ = resume_rules.classify(scenario_dir, min_agent_turns)
    return accepted_metrics(scenario_dir) if state == resume_rules.COMPLETED else None


def take_over(scenario_dir: Path, min_agent_turns: int) -> Path | None:
    """Move aside the unfinished attempt a dead process left in ``scenario_dir`` (as --resume
    does); returns where it went, or None when there was nothing to move."""
    state, _ = resume_rules.classify(scenario_dir, min_agent_turns)
    if state != resume_rules.IN_FLIGHT:
        return None
    stamp = resume_rules.timestamp(datetime.now())
    for extra in range(100):  # two take-overs in one second never collide
        try:
            return resume_rules.move_aside(scenario_dir, stamp if extra == 0 else f"{stamp}-{extra}")
        except FileExistsError:
            continue
    raise RunError(f"cannot move {scenario_dir} aside: too many attempts this second")


async def record(run_id: int, item: QueueItem, metrics: dict[str, Any], final_db: dict | None) -> None:
    """The accepted attempt's row (idempotent: one row per run, scenario and trial)."""
    await sync_to_async(services.scenario_result_record)(
        run_id=run_id, metrics=metrics, position=item.position, trial=item.trial, condition=item.condition,
        final_db=final_db)
