"""The worker side of the ``celery`` executor: one delivery of one scenario attempt, hosted
exactly as the local executor hosts it (same attempt, same retry rule, same row), with live
progress published on the run's Channels group.

A delivery may be a duplicate (at-least-once): a live lease of another worker makes it step back,
a completed directory is recorded and left alone, and an unfinished directory of a dead worker is
moved aside before the scenario runs again."""
from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from django.conf import settings

from scenarios.registry import get_eval_scenario
from scoring.runs.attempt import load_final_db, run_attempt
from scoring.runs.executors.base import QueueItem, RunError
from scoring.runs.executors.item import completed_metrics, discard_attempt, record, retry_decision, take_over
from scoring.runs.executors.lease import ScenarioLease
from scoring.runs.live import ChannelsProgress
from scoring.runs.options import options_from_mapping

RECORDED = "recorded"
LOADED = "loaded"  # a completed directory whose row (or ack) a dead worker never wrote
HELD_ELSEWHERE = "held elsewhere"
RETRY = "retry"


@dataclass(frozen=True)
class Delivery:
    """What one delivery did; ``retry_reason`` is set when the attempt must run again."""

    status: str
    retry_reason: str | None = None


def broker_client() -> redis.Redis:
    return redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=10, socket_connect_timeout=5)


async def attempt_on_worker(*, run_id: int, session_dir: str, item: dict[str, Any], options: dict[str, Any],
                            retries: int, reasons: list[str]) -> Delivery:
    from scoring.runs.runner import worker_attempt_settings  # the runner imports the executors

    queued = QueueItem(**item)
    run_options = options_from_mapping(options)
    session = Path(session_dir)
    if not session.is_dir():
        raise RunError(f"{session} is not visible on worker {socket.gethostname()}: the output directory "
                       "must be shared by the coordinator and every worker")
    scenario_dir = session / queued.dir_name
    lease = ScenarioLease(broker_client(), run_id, queued.dir_name)
    if not lease.acquire():
        return Delivery(HELD_ELSEWHERE)
    live = ChannelsProgress(run_id)
    try:
        done = completed_metrics(scenario_dir, run_options.min_agent_turns)
        if done is not None:
            await record(run_id, queued, done, load_final_db(scenario_dir))
            return Delivery(LOADED)
        take_over(scenario_dir, run_options.min_agent_turns)
        if retries == 0:
            live.scenario_started(queued.dir_name)
        scenario = get_eval_scenario(queued.scenario_name)
        attempt = await run_attempt(
            scenario, scenario_dir, worker_attempt_settings(run_options, scenario, live),
            auto_retry_count=retries, auto_retry_reasons=list(reasons),
            trial=queued.trial if queued.trials > 1 else None, label=queued.dir_name)
        reason = retry_decision(run_options, attempt, scenario_dir, retries)
        if reason is not None:
            discard_attempt(scenario_dir, retries + 1)
            return Delivery(RETRY, reason)
        await record(run_id, queued, attempt.metrics, attempt.final_db)
        live.scenario_finished(queued.dir_name, attempt.metrics)
        return Delivery(RECORDED)
    finally:
        await live.flush()
        lease.release()
