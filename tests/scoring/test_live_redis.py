"""Scaling out: with REDIS_URL the channel layer is Redis, so a ``run_eval`` in its own process
broadcasts live progress that a watcher in another process receives. Runs against a real local
redis-server (installed by scripts/setup.sh), started on a free loopback port by the test."""
from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from channels_redis.core import RedisChannelLayer

from evasite.env import redis_channel_host

from tests.services import REPO, redis_url  # noqa: F401 (fixture)
from tests.sqlite_template import migrated_sqlite


@pytest.mark.slow(seconds=20)
async def test_cli_run_is_live_for_a_watcher_in_another_process(tmp_path: Path, redis_url: str) -> None:
    env = {**os.environ, "EVASITE_SQLITE_PATH": str(tmp_path / "db.sqlite3"), "REDIS_URL": redis_url}
    migrated_sqlite(tmp_path / "db.sqlite3")
    layer = RedisChannelLayer(hosts=[redis_channel_host(redis_url)])  # as the site's settings build it
    channel = await layer.new_channel()
    await layer.group_add("run_1", channel)  # the first run of a fresh database
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "manage.py", "run_eval", "--scenarios", "eva_airline__1_1_3", "--modality", "text",
        "--output-dir", str(tmp_path), cwd=REPO, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    events = []
    try:
        async with asyncio.timeout(300):  # a one-scenario text run; minutes only on a loaded machine
            while not events or events[-1]["type"] != "run.finished":
                message = await layer.receive(channel)
                events.append(message["event"])
        assert await proc.wait() == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await layer.group_discard("run_1", channel)
        await layer.flush()
    types = [event["type"] for event in events]
    assert types[:2] == ["run.started", "scenario.started"] and "turn" in types
    finished = next(event for event in events if event["type"] == "scenario.finished")
    assert finished["name"] == "eva_airline__1_1_3" and finished["is_successful"] is True
    assert events[-1] == {"type": "run.finished", "success_rate": 1.0}


async def test_a_watcher_on_a_quiet_channel_keeps_waiting(redis_url: str) -> None:
    """Longer than channels_redis's 5 s blocking pop: the read must not time out underneath it."""
    layer = RedisChannelLayer(hosts=[redis_channel_host(redis_url)])
    channel = await layer.new_channel()
    try:
        with pytest.raises(TimeoutError) as waited:
            async with asyncio.timeout(7):
                await layer.receive(channel)
        assert type(waited.value) is TimeoutError, waited.value  # asyncio's, not redis's "Timeout reading"
    finally:
        await layer.flush()
