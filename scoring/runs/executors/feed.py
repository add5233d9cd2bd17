"""A run's news from the processes running its scenarios to its coordinator: one Redis stream
per run. Workers append (a scenario started, a log line, how a delivery ended); the coordinator
reads only what was appended since its last read, blocking until there is something, so it
costs nothing per waiting scenario and never polls the result backend.

The stream is a fast path, not the record: results are rows and files, and the coordinator
falls back on them (and on the leases) for anything the stream may have lost in a Redis restart.
"""
from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import redis
import redis.asyncio as aioredis
from django.conf import settings

FEED_TTL_SECONDS = 7 * 24 * 3600
PUSH_TIMEOUT_S = 10.0
"""How long a worker keeps trying to deliver its news while Redis is away."""

STARTED = "started"
LOG = "log"
OUTCOME = "outcome"

logger = logging.getLogger(__name__)


def feed_key(run_id: int) -> str:
    return f"evasite:feed:{run_id}"


class FeedReader:
    """The coordinator's end: ``tail()`` once before dispatching, then ``read()`` from there."""

    def __init__(self, client: redis.Redis, run_id: int) -> None:
        self.client = client
        self.key = feed_key(run_id)
        self.cursor = "0-0"

    def tail(self) -> None:
        """Start after everything already in the stream (news of an earlier invocation)."""
        last = self.client.xrevrange(self.key, count=1)
        self.cursor = last[0][0].decode() if last else "0-0"

    def read(self, block_ms: int, count: int = 1000) -> list[dict[str, Any]]:
        """Entries appended since the last read, waiting up to ``block_ms`` for the first one."""
        answer = self.client.xread({self.key: self.cursor}, count=count, block=block_ms)
        entries = []
        for _, items in answer or []:
            for entry_id, fields in items:
                self.cursor = entry_id.decode()
                try:
                    entries.append(json.loads(fields[b"entry"]))
                except (KeyError, ValueError):
                    continue  # not ours
        return entries


class FeedWriter:
    """A worker's end, used from its event loop: appends in order from one background task, so
    a slow or absent Redis never blocks the call; ``flush()`` waits (bounded) for the rest."""

    def __init__(self, run_id: int) -> None:
        self.key = feed_key(run_id)
        self.client = aioredis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=5, socket_connect_timeout=5)
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._pusher: asyncio.Task | None = None

    def push(self, entry: dict[str, Any]) -> None:
        self._queue.put_nowait(entry)
        if self._pusher is None:
            self._pusher = asyncio.get_running_loop().create_task(self._push_all())

    async def _push_all(self) -> None:
        while True:
            entry = await self._queue.get()
            try:
                await self._push_one(json.dumps(entry))
            finally:
                self._queue.task_done()

    async def _push_one(self, data: str) -> None:
        deadline = asyncio.get_running_loop().time() + PUSH_TIMEOUT_S
        while True:
            try:
                async with self.client.pipeline(transaction=True) as pipe:
                    await pipe.xadd(self.key, {"entry": data}).expire(self.key, FEED_TTL_SECONDS).execute()
                return
            except (redis.RedisError, OSError) as exc:
                if asyncio.get_running_loop().time() >= deadline:
                    # The coordinator learns it from the leases and the rows instead.
                    logger.warning("run feed unavailable (%s); an entry was dropped", exc)
                    return
                await asyncio.sleep(0.5)

    async def flush(self) -> None:
        if self._pusher is not None:
            try:
                await asyncio.wait_for(self._queue.join(), PUSH_TIMEOUT_S + 5)
            except asyncio.TimeoutError:
                pass
            self._pusher.cancel()
            await asyncio.gather(self._pusher, return_exceptions=True)
            self._pusher = None
        await self.client.aclose()

    # --- what workers say (a ProgressSink for the events the coordinator shows) -------------------

    def scenario_started(self, name: str) -> None:
        self.push({"kind": STARTED, "name": name})

    def log(self, line: str, level: str = "INFO") -> None:
        """A line for the run's ``evaluation_log.txt`` (the coordinator writes it), and the worker's log."""
        logger.log(logging.WARNING if level == "WARNING" else logging.ERROR if level == "ERROR" else logging.INFO,
                   "%s", line)
        self.push({"kind": LOG, "line": line, "level": level})

    def outcome(self, name: str, status: str, error: str = "") -> None:
        self.push({"kind": OUTCOME, "name": name, "status": status, "error": error})

    def run_started(self, **_: Any) -> None: ...
    def turn(self, name: str, role: str, text: str) -> None: ...
    def scenario_finished(self, name: str, metrics: dict[str, Any]) -> None: ...
    def run_finished(self, **_: Any) -> None: ...
