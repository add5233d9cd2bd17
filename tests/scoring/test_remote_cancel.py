"""Cancel from any process: with the Redis channel layer, the process that receives the click asks
the run's coordinator (a shell ``run_eval``, another web process) to cancel, and the run ends
``interrupted`` and resumable as after Ctrl-C. Real redis-server, real daphne and ``run_eval``."""
from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from channels_redis.core import RedisChannelLayer

from evasite.env import redis_channel_host
from scoring.runs import remote_cancel
from tests import warm_python
from tests.browser import USERNAME, LiveSite
from tests.services import REPO, redis_url  # noqa: F401 (fixture)
from tests.voice.human.helpers import csrf_headers, logged_in_session

ALL = 50
"""The run: every eva_airline scenario in text, long enough (half a minute or more) that it is still
going when the test's Cancel arrives, however loaded the machine."""


def _layer(url: str) -> RedisChannelLayer:
    return RedisChannelLayer(hosts=[redis_channel_host(url)])  # as the site's settings build it


async def test_the_coordinator_cancels_its_run_even_when_the_first_cancellation_is_swallowed(redis_url: str) -> None:
    layer = _layer(redis_url)
    swallowed = asyncio.Event()

    async def stubborn_run() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            swallowed.set()  # as a library's teardown sometimes does
        await asyncio.sleep(60)

    run = asyncio.ensure_future(stubborn_run())
    asked_by: list[str] = []
    listener = await remote_cancel.listen(7, run, asked_by.append, layer=layer)  # joined when it returns
    assert listener is not None
    try:
        assert not await remote_cancel.request(8, by="alice", layer=layer, timeout=1.5)  # nobody coordinates run 8
        assert await remote_cancel.request(7, by="alice", layer=layer)
        async with asyncio.timeout(5):
            await asyncio.wait({run})
        assert run.cancelled() and swallowed.is_set() and asked_by == ["alice"]
    finally:
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
        await layer.flush()


def test_without_a_cross_process_layer_nothing_listens_and_nothing_is_asked() -> None:
    async def check() -> None:
        task = asyncio.ensure_future(asyncio.sleep(0))
        assert await remote_cancel.listen(1, task, print) is None  # the tests' in-memory layer
        assert not await remote_cancel.request(1, by="alice")
        await task

    asyncio.run(check())


def _run_row(db: Path) -> tuple[str, int, str] | None:
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT status, completed_scenarios, error FROM scoring_run").fetchone()


def _second_server(first: LiveSite, root: Path) -> LiveSite:
    """Another web process of the same site: its database, secret key and Redis."""
    root.mkdir(parents=True)
    for name in (first.db_path.name, "secret_key.txt"):
        (root / name).symlink_to(first.root / name)
    (root / first.output_dir.name).symlink_to(first.output_dir, target_is_directory=True)
    other = LiveSite(root, dict(first.extra_env))
    other.start()
    return other


async def _post(session, site: LiveSite, path: str) -> None:
    async with session.post(f"{site.url}{path}", headers=csrf_headers(session, site), allow_redirects=False) as response:
        assert response.status == 302, (path, response.status)


async def _until_status(site: LiveSite, status: str, timeout: float = 120) -> tuple[str, int, str]:
    deadline = time.monotonic() + timeout
    while (row := _run_row(site.db_path))[0] != status:
        assert time.monotonic() < deadline, row
        await asyncio.sleep(0.2)
    return row


@pytest.mark.slow(seconds=55)
async def test_any_web_process_cancels_and_resumes_a_run_another_process_coordinates(
        tmp_path: Path, redis_url: str) -> None:
    first = LiveSite(tmp_path / "web1", {"REDIS_URL": redis_url})
    first.prepare()
    first.python(f"from django.contrib.auth.models import User; User.objects.filter(username={USERNAME!r})"
                 ".update(is_staff=True)")  # a shell run has no owner: staff control it
    first.output_dir.mkdir()
    first.start()
    second = _second_server(first, tmp_path / "web2")
    run_eval = warm_python.Popen(
        [sys.executable, "manage.py", "run_eval", "--domain", "eva_airline", "--modality", "text",
         "--output-dir", str(first.output_dir)],
        cwd=REPO, env=first.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    session = await logged_in_session(first)  # the session is the site's: valid on both processes
    try:
        deadline = time.monotonic() + 120
        while (_run_row(first.db_path) or ("",))[0] != "running":
            assert time.monotonic() < deadline and run_eval.poll() is None, "the shell run never started"
            await asyncio.sleep(0.05)
        # A shell run, cancelled from a web process.
        await _post(session, first, "/runs/1/cancel/")
        out, err = run_eval.communicate(timeout=60)
        assert run_eval.returncode == 130, err
        assert f"interrupted (cancelled from the site by {USERNAME}); resume with --resume" in err
        status, done, error = _run_row(first.db_path)
        assert status == "interrupted" and error == f"cancelled from the site by {USERNAME}"
        assert done < ALL
        async with session.get(f"{second.url}/runs/1/") as response:
            page = await response.text()
        assert f"It was cancelled by {USERNAME}." in page and ">Resume</button>" in page

        # Resumed on the second process, cancelled from the first while the second coordinates it.
        await _post(session, second, "/runs/1/resume/")
        await _until_status(first, "running")
        await _post(session, first, "/runs/1/cancel/")
        status, _, error = await _until_status(first, "interrupted", timeout=30)
        assert error == f"cancelled from the site by {USERNAME}"

        # Resumed on the first: it finishes what was left, on the same row.
        await _post(session, first, "/runs/1/resume/")
        _, done, _ = await _until_status(first, "finished", timeout=300)
        assert done == ALL
        log = next(first.output_dir.glob("eval_*/evaluation_log.txt")).read_text()
        assert log.count("Cancel requested from the site by") == 2 and log.count("RESUMING") == 2
    finally:
        await session.close()
        if run_eval.poll() is None:
            run_eval.kill()
        second.stop()
        first.stop()
