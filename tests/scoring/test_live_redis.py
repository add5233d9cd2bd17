"""Scaling out: with REDIS_URL the channel layer is Redis, so a ``run_eval`` in its own process
broadcasts live progress that a watcher in another process receives. Runs against a real local
redis-server (installed by scripts/setup.sh), started on a free loopback port by the test."""
from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from channels_redis.core import RedisChannelLayer

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (scripts/setup.sh installs it)")
    port = _free_port()
    log = open(tmp_path / "redis.log", "w")
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            pytest.fail("redis-server did not start")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


async def test_cli_run_is_live_for_a_watcher_in_another_process(tmp_path: Path, redis_url: str) -> None:
    env = {**os.environ, "EVASITE_SQLITE_PATH": str(tmp_path / "db.sqlite3"), "REDIS_URL": redis_url}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=REPO, env=env, check=True, timeout=120)
    layer = RedisChannelLayer(hosts=[redis_url])
    channel = await layer.new_channel()
    await layer.group_add("run_1", channel)  # the first run of a fresh database
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "manage.py", "run_eval", "--scenarios", "eva_airline__1_1_3", "--modality", "text",
        "--output-dir", str(tmp_path), cwd=REPO, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    events = []
    try:
        async with asyncio.timeout(120):
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
