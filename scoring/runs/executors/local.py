"""The ``local`` executor: every pending scenario is an asyncio task in the coordinating process
(the ``run_eval`` process or the web server), at most ``--concurrency`` at a time; with
``--processes N``, in N worker processes of this machine instead (``executors.processes``).

Resuming a run that ran on Celery workers, some of them may still be running its scenarios (or
pick up its queued tasks): then every delivery takes the scenario's lease like a worker does, and
waits for a scenario a live worker holds instead of running it twice."""
from __future__ import annotations

import asyncio
from pathlib import Path

import redis
from django.conf import settings

from scoring.core.files import read_json
from scoring.runs.executors.base import QueueItem, RunContext, run_all
from scoring.runs.executors.delivery import HELD, LOST, deliver
from scoring.runs.executors.lease import LEASE_TTL_SECONDS, RunLeases, redis_client
from scoring.runs.executors.plan import plan_attempt
from scoring.runs.executors.processes import run_in_processes
from scoring.runs.options import RunOptions

HELD_POLL_SECONDS = 1.0


def ran_on_workers(session_dir: Path) -> bool:
    """Whether an earlier invocation of this session used the celery executor (run_args.json)."""
    try:
        payload = read_json(session_dir / "run_args.json")
    except (OSError, ValueError):
        return False
    invocations = payload.get("invocations", [payload]) if isinstance(payload, dict) else []
    return any(isinstance(record, dict) and (record.get("parsed_args") or {}).get("executor") == "celery"
               for record in invocations)


class LocalExecutor:
    name = "local"

    def preflight(self, options: RunOptions, names: list[str]) -> None:
        return None  # embedded: nothing else has to be running

    def leases(self, run_id: int, session_dir: Path, resuming: bool) -> RunLeases | None:
        if resuming and settings.REDIS_URL and ran_on_workers(session_dir):
            return RunLeases(redis_client(), run_id)
        return None  # only this process runs the run's scenarios

    async def run_items(self, run: RunContext, pending: list[QueueItem]) -> None:
        if run.options.processes > 1 and run.user_endpoint is None and run.leases is None and pending:
            # A human tester's peer lives in this process, and a leased resume waits on workers.
            await run_in_processes(run, pending)
            return
        semaphore = asyncio.Semaphore(run.options.concurrency)

        async def worker(item: QueueItem) -> None:
            async with semaphore:
                await run_item(run, item)

        await run_all([worker(item) for item in pending])


async def run_item(run: RunContext, item: QueueItem) -> None:
    """Plan and deliver ``item`` here, then hand the accepted attempt to the run."""
    plan = plan_attempt(run.options, item, run_id=run.run_id, session_dir=run.session_dir, events=run.progress,
                        user_endpoint=run.user_endpoint)
    waited = False
    while True:
        lease = run.leases.lease(item.dir_name) if run.leases is not None else None
        delivery = await deliver(plan, run.progress, run.log.write, lease=lease)
        if delivery.status not in (HELD, LOST):
            break
        if not waited:
            run.log.write(f"{item.dir_name}: held by another process (a live worker); waiting for it")
            waited = True
        await _until_free(run.leases, item.dir_name)
    run.accept(item, delivery.metrics or {}, plan.scenario_dir)


async def _until_free(leases: RunLeases, dir_name: str) -> None:
    """Wait while someone holds ``dir_name``'s lease (its holder finishes it, or dies and it lapses)."""
    while True:
        try:
            if not await asyncio.to_thread(leases.held, [dir_name]):
                return
        except redis.RedisError:
            await asyncio.sleep(LEASE_TTL_SECONDS / 3)  # the broker is away: its holders cannot renew either
        await asyncio.sleep(HELD_POLL_SECONDS)
