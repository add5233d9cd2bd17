"""The coordinating side of the ``celery`` executor: one task per pending scenario on the
``evasite-scenarios`` queue, then watch them to the end while showing the same progress display.

What the coordinator reads, and how often:
- the run's feed (``executors.feed``), blocking, only what was appended since the last read:
  which scenarios started, the log lines, how each delivery ended;
- every 2 s, the run's claimed scenarios and their leases (two round trips, as many keys as
  there are busy workers). A claimed scenario whose lease has lapsed with no result belongs to
  a worker that is gone: it is dispatched again at once, ahead of the queue. Its old message,
  redelivered by the broker after the visibility timeout (the last resort when the coordinator
  itself is gone), finds the scenario held or completed and steps back or records it again (one
  row per run, scenario and trial);
- the rows only to confirm a lapsed scenario has no result, and after a Redis outage, when the
  feed may have lost entries.
The wait never hangs: a failed attempt fails the run, and a run with no worker progress (no feed
entry, no live lease) for longer than a redelivery can take ends ``interrupted`` with a message,
to be resumed later."""
from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import redis
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection

from evasite.celery import app
from scenarios.registry import get_eval_scenario
from scoring import services
from scoring.runs.executors import feed as news
from scoring.runs.executors.base import QueueItem, RunContext, RunError, RunInterrupted
from scoring.runs.executors.delivery import FAILED, LOADED, RECORDED
from scoring.runs.executors.item import accepted_metrics
from scoring.runs.executors.lease import LEASE_TTL_SECONDS, RunLeases, redis_client
from scoring.runs.executors.plan import ATTEMPT_TASK, options_payload, plan_payload
from scoring.runs.executors.records import recorded_keys, result_recorded
from scoring.runs.options import RunOptions

FEED_BLOCK_MS = 1000
FEED_BATCH_SECONDS = 0.25
"""Reads of a busy feed are at least this far apart, so news of many workers comes in batches."""
LEASE_POLL_SECONDS = 2.0
REDISPATCH_LIMIT = 3
"""A scenario whose worker is lost this many times fails the run (it may be what kills them)."""
DISPATCH_PRIORITY = 3
REDISPATCH_PRIORITY = 0
"""kombu's Redis transport serves priority 0 first (its steps are 0, 3, 6, 9): a scenario
dispatched again runs as soon as a worker is free, not after the whole queue."""


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
    """Longest honest silence: every worker busy with other runs' attempts up to the duration cap,
    or a dead worker's message waiting for the broker to redeliver it."""
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

    def leases(self, run_id: int, session_dir: Path, resuming: bool) -> RunLeases:
        return RunLeases(redis_client(), run_id)

    async def run_items(self, run: RunContext, pending: list[QueueItem]) -> None:
        if pending:
            await _Watch(run, pending).until_done()


class _Watch:
    """The coordinator's view of the dispatched scenarios, until every one is accepted."""

    def __init__(self, run: RunContext, pending: list[QueueItem]) -> None:
        self.run = run
        self.remaining = {item.dir_name: item for item in pending}
        self.unread: set[str] = set()  # recorded; its metrics.json not visible here yet (a lagging filesystem)
        self.redispatched: Counter[str] = Counter()
        self.task_ids: list[str] = []
        self.options = options_payload(run.options)
        self.client = redis_client()
        self.feed = news.FeedReader(self.client, run.run_id)
        self.leases = run.leases or RunLeases(self.client, run.run_id)
        self.last_progress = self.last_lease_poll = time.monotonic()
        self.redis_trouble_at = float("-inf")
        self.reconcile_pending = False

    async def until_done(self) -> None:
        started, cpu = time.monotonic(), time.process_time()
        count = len(self.remaining)
        await asyncio.to_thread(self.feed.tail)  # before any dispatch: nothing of this invocation is missed
        await sync_to_async(services.scenario_results_discard)(
            run_id=self.run.run_id, keys=[item.key for item in self.remaining.values()])
        await asyncio.to_thread(self._dispatch, list(self.remaining.values()), DISPATCH_PRIORITY)
        self.run.log.write(f"Dispatched {count} scenario(s) to queue {settings.EVASITE_CELERY_QUEUE}")
        try:
            while self.remaining:
                await self._step()
        except BaseException:
            await asyncio.to_thread(self._revoke)
            raise
        self.run.log.write(f"Watched {count} scenario(s) on workers for {time.monotonic() - started:.1f} s: "
                           f"{time.process_time() - cpu:.2f} CPU s in the coordinator")

    def _dispatch(self, items: list[QueueItem], priority: int) -> None:
        for item in items:
            payload = plan_payload(run_id=self.run.run_id, session_dir=self.run.session_dir, options=self.options,
                                   item=item)
            # ignore_result: news comes on the feed, so nothing subscribes to a result per task.
            self.task_ids.append(app.send_task(ATTEMPT_TASK, kwargs=payload, queue=settings.EVASITE_CELERY_QUEUE,
                                               priority=priority, ignore_result=True).id)

    def _revoke(self) -> None:
        """Best effort: queued tasks of an abandoned wait are dropped (a resume dispatches anew)."""
        try:
            app.control.revoke(self.task_ids)
        except Exception:  # the broker may be the reason we stopped
            pass

    async def _step(self) -> None:
        read_at = time.monotonic()
        try:
            entries = await asyncio.to_thread(self.feed.read, FEED_BLOCK_MS)
        except (redis.RedisError, OSError):
            self._trouble()
            await asyncio.sleep(1.0)
            entries = []
        for entry in entries:
            self._on_entry(entry)
        if self.reconcile_pending:
            await self._reconcile()
        for name in sorted(self.unread):
            self._accept(name)
        now = time.monotonic()
        if now - self.last_lease_poll >= LEASE_POLL_SECONDS:
            self.last_lease_poll = now
            await self._check_leases()
        if self.remaining and time.monotonic() - self.last_progress > stall_seconds():
            await self._give_up_unless_alive()
        if entries:  # more is likely on its way: let it gather for the next read
            await asyncio.sleep(max(0.0, read_at + FEED_BATCH_SECONDS - time.monotonic()))

    def _trouble(self) -> None:
        """Redis is away: its leases and feed may come back without what happened meanwhile."""
        self.redis_trouble_at = time.monotonic()
        self.reconcile_pending = True

    def _on_entry(self, entry: dict) -> None:
        self.last_progress = time.monotonic()
        kind, name = entry.get("kind"), entry.get("name")
        if kind == news.LOG:
            self.run.log.write(str(entry.get("line")), str(entry.get("level") or "INFO"))
            return
        if name not in self.remaining:
            return  # a late duplicate of a scenario already accepted
        if kind == news.STARTED:
            self.run.display.scenario_started(name)
        elif kind == news.OUTCOME:
            status = entry.get("status")
            if status in (RECORDED, LOADED):
                self.unread.add(name)
            elif status == FAILED:
                raise RunError(f"{name}: attempt failed on a worker: {entry.get('error')}")
            # HELD, LOST: someone else holds the scenario (its claim is watched) or it lapses

    def _accept(self, name: str) -> None:
        item = self.remaining[name]
        scenario_dir = self.run.session_dir / name
        metrics = accepted_metrics(scenario_dir)
        if metrics is None:
            return  # row visible before the file on a lagging shared filesystem: next step
        del self.remaining[name]
        self.unread.discard(name)
        self.last_progress = time.monotonic()
        self.run.accept(item, metrics, scenario_dir)
        self.run.display.scenario_finished(name, metrics)

    async def _check_leases(self) -> None:
        try:
            claimed, held = await asyncio.to_thread(self._claims)
        except (redis.RedisError, OSError):
            self._trouble()
            return
        if held:
            self.last_progress = time.monotonic()
        if time.monotonic() - self.redis_trouble_at <= LEASE_TTL_SECONDS:
            return  # after an outage, holders get a heartbeat's time to take their leases back
        for name in sorted(claimed - held):
            await self._lapsed(name)

    def _claims(self) -> tuple[set[str], set[str]]:
        """The remaining scenarios someone claimed, and those whose lease is held now."""
        claimed = (self.leases.claimed() & set(self.remaining)) - self.unread
        return claimed, self.leases.held(claimed)

    async def _lapsed(self, name: str) -> None:
        """A claimed scenario nobody holds: recorded after all, or dispatched again now."""
        item = self.remaining[name]
        recorded = await sync_to_async(result_recorded)(run_id=self.run.run_id, key=item.key)
        if recorded is None:
            return  # the database is away: look again at the next lease poll
        if recorded:
            self.unread.add(name)
            return
        try:
            if not await asyncio.to_thread(self.leases.forget_lapsed, name):
                return  # taken again meanwhile (the broker's redelivery of its message): watched as before
        except (redis.RedisError, OSError):
            self._trouble()
            return
        self.redispatched[name] += 1
        if self.redispatched[name] > REDISPATCH_LIMIT:
            raise RunError(f"{name}: its worker was lost {REDISPATCH_LIMIT + 1} times (killed, or out of memory?); "
                           "see the workers' logs")
        await asyncio.to_thread(self._dispatch, [item], REDISPATCH_PRIORITY)
        self.last_progress = time.monotonic()
        self.run.log.warning(f"{name}: its lease lapsed with no result (the worker is gone); dispatched again")

    async def _reconcile(self) -> None:
        """After a Redis outage: results the feed may have lost, from the rows."""
        keys = await sync_to_async(recorded_keys)(run_id=self.run.run_id)
        if keys is None:
            return
        self.reconcile_pending = False
        self.unread.update(name for name, item in self.remaining.items() if item.key in keys)

    async def _give_up_unless_alive(self) -> None:
        """The last look before ending the run interrupted: a row the feed missed."""
        await self._reconcile()
        if self.unread:
            self.last_progress = time.monotonic()
            return
        raise RunInterrupted(
            f"no worker progress for {stall_seconds():.0f}s with {len(self.remaining)} scenario(s) left (are workers "
            f"consuming queue {settings.EVASITE_CELERY_QUEUE} and is the broker up?)")
