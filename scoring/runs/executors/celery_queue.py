"""The coordinating side of the ``celery`` executor: one task per pending scenario on the
``evasite-scenarios`` queue, then wait for their rows while showing the same progress display.

Completion is read from the database (the rows workers write), not from the broker, so a broker
restart cannot lose a result. The wait never hangs: a failed task fails the run, and a run with no
worker progress (no new row, no live lease) for longer than a redelivery can take ends
``interrupted`` with a message, to be resumed later."""
from __future__ import annotations

import asyncio
import time
from dataclasses import asdict
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection

from scenarios.registry import get_eval_scenario
from scoring import services
from scoring.runs.executors.base import QueueItem, RunContext, RunError, RunInterrupted
from scoring.runs.executors.item import accepted_metrics
from scoring.runs.executors.lease import LEASE_TTL_SECONDS, live_leases
from scoring.runs.executors.records import recorded_keys
from scoring.runs.options import RunOptions

POLL_SECONDS = 0.5
STATE_POLL_SECONDS = 2.0


def storage_problems(*, database_vendor: str, redis_url: str) -> list[str]:
    """What stops the celery executor from working (empty when nothing does)."""
    problems = []
    if database_vendor != "postgresql":
        problems.append("the celery executor needs DATABASE_URL pointing at PostgreSQL (workers on several "
                        f"processes or machines write the rows); the database is {database_vendor}")
    if not redis_url:
        problems.append("the celery executor needs REDIS_URL (the broker, and the channel layer for live progress)")
    return problems


def visibility_timeout() -> float:
    return float(settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"])


def stall_seconds() -> float:
    """Longest honest silence: a dead worker's lease expires, then its task is redelivered."""
    return visibility_timeout() + 2 * LEASE_TTL_SECONDS


class CeleryExecutor:
    name = "celery"

    def preflight(self, options: RunOptions, names: list[str]) -> None:
        problems = storage_problems(database_vendor=connection.vendor, redis_url=settings.REDIS_URL)
        if options.judge_api_key:
            problems.append("--judge-api-key is not sent through the broker; give the workers the key in the "
                            "environment variable named by --judge-api-key-name")
        cap = settings.EVASITE_CELERY_DURATION_CAP
        longest = options.duration if options.duration is not None else max(
            (get_eval_scenario(name).max_duration or 0 for name in names), default=0)
        if longest > cap:
            problems.append(f"a scenario may run {longest}s, more than EVASITE_CELERY_DURATION_CAP={cap} (the "
                            "broker's visibility timeout is derived from it): lower --duration or raise the cap")
        if problems:
            raise RunError("; ".join(problems))

    def busy(self, run_id: int, dir_names: list[str]) -> set[str]:
        """Scenarios a live worker is running now (resume must not move their directories)."""
        from scoring.runs.executors.celery_worker import broker_client
        from scoring.runs.executors.lease import ScenarioLease

        client = broker_client()
        return {name for name in dir_names if client.exists(ScenarioLease(client, run_id, name).key)}

    async def run_items(self, run: RunContext, pending: list[QueueItem]) -> None:
        if not pending:
            return
        from scoring.tasks import run_scenario_attempt

        await sync_to_async(services.scenario_results_discard)(run_id=run.run_id, keys=[i.key for i in pending])
        payload = {**asdict(run.options), "judge_api_key": None}
        handles = {}
        for item in pending:
            handles[item.position] = await asyncio.to_thread(
                run_scenario_attempt.apply_async,
                kwargs={"run_id": run.run_id, "session_dir": str(run.session_dir), "item": item.to_payload(),
                        "options": payload},
                queue=settings.EVASITE_CELERY_QUEUE)
        run.log.write(f"Dispatched {len(pending)} scenario(s) to queue {settings.EVASITE_CELERY_QUEUE}")
        relay = asyncio.create_task(_relay_started(run, {item.dir_name for item in pending}))
        try:
            await _wait_for_rows(run, pending, handles)
        except BaseException:
            await asyncio.to_thread(_revoke, [handles[item.position] for item in pending])
            raise
        finally:
            relay.cancel()
            await asyncio.gather(relay, return_exceptions=True)


async def _wait_for_rows(run: RunContext, pending: list[QueueItem], handles: dict[int, Any]) -> None:
    remaining = {item.position: item for item in pending}
    last_progress = last_state_poll = time.monotonic()
    limit = stall_seconds()
    while remaining:
        # None while the database is briefly away: the workers retry their writes, we our reads.
        done = await sync_to_async(recorded_keys)(run_id=run.run_id) or set()
        for position, item in list(remaining.items()):
            if item.key not in done:
                continue
            scenario_dir = run.session_dir / item.dir_name
            metrics = accepted_metrics(scenario_dir)
            if metrics is None:
                continue  # row visible before the file on a lagging shared filesystem: next poll
            del remaining[position]
            last_progress = time.monotonic()
            run.accept(item, metrics, scenario_dir)
            run.log.write(f"{item.dir_name}: finished {metrics.get('stop_reason')} "
                          f"is_successful={metrics.get('is_successful')}")
            run.display.scenario_finished(item.dir_name, metrics)
        if not remaining:
            return
        now = time.monotonic()
        if now - last_state_poll >= STATE_POLL_SECONDS:
            last_state_poll = now
            failed, working = await asyncio.to_thread(_task_states, run.run_id, remaining, handles)
            if failed:
                raise RunError(failed)
            if working:
                last_progress = now
        if now - last_progress > limit:
            raise RunInterrupted(
                f"no worker progress for {limit:.0f}s with {len(remaining)} scenario(s) left (are workers "
                f"consuming queue {settings.EVASITE_CELERY_QUEUE} and is the broker up?)")
        await asyncio.sleep(POLL_SECONDS)


def _task_states(run_id: int, remaining: dict[int, QueueItem], handles: dict[int, Any]) -> tuple[str, bool]:
    """A failed task's message (or "") and whether any worker holds a lease of the run."""
    import redis

    from scoring.runs.executors.celery_worker import broker_client

    try:
        for position, item in remaining.items():
            result = handles[position]
            if result.state == "FAILURE":
                return f"{item.dir_name}: attempt failed on a worker: {result.result!r}", False
        return "", live_leases(broker_client(), run_id) > 0
    except (redis.RedisError, OSError):
        return "", False  # broker away: the stall clock decides


def _revoke(handles: list[Any]) -> None:
    """Best effort: queued tasks of an abandoned wait are dropped (a resume dispatches anew)."""
    for handle in handles:
        try:
            handle.revoke()
        except Exception:  # the broker may be the reason we stopped
            return


async def _relay_started(run: RunContext, names: set[str]) -> None:
    """Show workers' ``scenario.started`` events on the coordinator's display (best effort)."""
    from channels.layers import get_channel_layer

    from scoring.runs.live import run_group

    layer = get_channel_layer()
    if layer is None:
        return
    group = run_group(run.run_id)
    while True:
        channel = None
        try:
            channel = await layer.new_channel()
            await layer.group_add(group, channel)
            while True:
                event = (await layer.receive(channel)).get("event") or {}
                if event.get("type") == "scenario.started" and event.get("name") in names:
                    run.display.scenario_started(event["name"])
        except asyncio.CancelledError:
            if channel is not None:
                try:
                    await layer.group_discard(group, channel)
                except Exception:
                    pass
            raise
        except Exception:  # broker restart: subscribe again
            await asyncio.sleep(1.0)


