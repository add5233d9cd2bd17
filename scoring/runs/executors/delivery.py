"""The delivery step: what happens to one queued scenario, whoever runs it (an asyncio task of
the local executor, a Celery worker). Claim it (its lease, when the run has one), record a
completed attempt a lost process left behind instead of re-running it, move an unfinished one
aside, run attempts with the automatic retry of harness.md §17.2, record the accepted attempt,
and say so: progress events to ``events``, ``evaluation_log.txt`` lines to ``log``.

The retry loop, the log lines and the events exist here only, so both executors behave alike."""
from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scoring.runs.attempt import load_final_db, run_attempt
from scoring.runs.executors.item import completed_metrics, discard_attempt, record, retry_decision, take_over
from scoring.runs.executors.lease import ScenarioLease
from scoring.runs.executors.plan import AttemptPlan
from scoring.runs.progress import ProgressSink

RECORDED = "recorded"
LOADED = "loaded"
"""A completed directory (a lost holder's, or seen by a late duplicate) recorded, not re-run."""
HELD = "held elsewhere"
LOST = "lease lost"
"""The lease was lost mid-way: the attempt was abandoned to whoever holds the scenario now."""
FAILED = "failed"
"""Not a delivery's own status: what a worker reports when its delivery raised (the run fails)."""

ACQUIRE_WITHIN_SECONDS = 60.0
"""How long a delivery keeps trying to take its lease while Redis is briefly away."""

Log = Callable[[str, str], None]
"""``(line, level)``: ``EvalLog.write`` on the coordinator, the run's feed on a worker."""


@dataclass(frozen=True)
class Delivery:
    status: str
    metrics: dict[str, Any] | None = None

    @property
    def accepted(self) -> bool:
        return self.status in (RECORDED, LOADED)


async def deliver(plan: AttemptPlan, events: ProgressSink, log: Log, *, lease: ScenarioLease | None = None
                  ) -> Delivery:
    """Deliver ``plan`` to an accepted, recorded attempt; HELD when someone else holds its lease,
    LOST when the lease is lost on the way. An attempt that can neither be kept nor retried
    raises its error (the run fails)."""
    if lease is None:
        return await _deliver(plan, events, log, None)
    if not await asyncio.to_thread(lease.acquire, within=ACQUIRE_WITHIN_SECONDS):
        return Delivery(HELD)
    try:
        return await _while_held(plan, events, log, lease)
    finally:
        lease.release()


async def _while_held(plan: AttemptPlan, events: ProgressSink, log: Log, lease: ScenarioLease) -> Delivery:
    """The delivery, cancelled as soon as the lease is lost: the next holder owns the directory."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(_deliver(plan, events, log, lease))
    lease.on_lost = lambda: loop.call_soon_threadsafe(task.cancel)
    if lease.lost.is_set():
        task.cancel()
    try:
        return await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if not lease.lost.is_set() or (current is not None and current.cancelling()):
            raise  # the caller was cancelled (Ctrl-C, a cancelled run)
        log(f"{plan.name}: lease lost (Redis unreachable for too long, or taken over); attempt abandoned",
            "WARNING")
        return Delivery(LOST)


async def _deliver(plan: AttemptPlan, events: ProgressSink, log: Log, lease: ScenarioLease | None) -> Delivery:
    name, options, scenario_dir = plan.name, plan.options, plan.scenario_dir
    done = completed_metrics(scenario_dir, options.min_agent_turns)
    if done is not None:
        return await _accept(plan, events, log, Delivery(LOADED, done), load_final_db(scenario_dir))
    moved = take_over(scenario_dir, options.min_agent_turns)
    if moved is not None:
        log(f"{name}: unfinished attempt of a lost process moved to {moved.name}", "WARNING")
    events.scenario_started(name)
    log(f"{name}: started", "INFO")
    retries, reasons = 0, []
    while True:
        attempt = await run_attempt(plan.scenario, scenario_dir, plan.settings, auto_retry_count=retries,
                                    auto_retry_reasons=reasons, trial=plan.trial, label=name)
        try:
            reason = retry_decision(options, attempt, scenario_dir, retries)
        except BaseException as error:
            log(f"{name}: attempt failed: {type(error).__name__}: {error}", "ERROR")
            raise
        if reason is None:
            break
        retries += 1
        reasons.append(reason)
        moved = discard_attempt(scenario_dir, retries)
        log(f"{name}: attempt discarded ({reason}); moved to {moved.name}; "
            f"retrying in {options.auto_retry_backoff_secs}s", "WARNING")
        await asyncio.sleep(options.auto_retry_backoff_secs)
    if lease is not None and not await asyncio.to_thread(lease.confirm):
        raise asyncio.CancelledError  # a new holder may already be running it: never record over it
    return await _accept(plan, events, log, Delivery(RECORDED, attempt.metrics), attempt.final_db)


async def _accept(plan: AttemptPlan, events: ProgressSink, log: Log, delivery: Delivery,
                  final_db: dict | None) -> Delivery:
    """The row (idempotent: one per run, scenario and trial), the log line and the event."""
    metrics = delivery.metrics or {}
    await record(plan.run_id, plan.item, metrics, final_db)
    log(f"{plan.name}: finished {metrics.get('stop_reason')} is_successful={metrics.get('is_successful')}", "INFO")
    events.scenario_finished(plan.name, metrics)
    return delivery
