"""The site on two web processes over the celery executor: two real daphne servers sharing a
PostgreSQL database and redis-server, real Celery workers for the scenarios and for the runs'
coordination. A run started on one server survives that server being killed at once, is
cancelled and resumed from the other, and goes on to its end while the first one restarts.

Each scenario lasts up to its 12 s duration cap (a stand-in passenger LLM answering after 1 s),
so the run is still going when its first web process is killed.
"""
from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser import PASSWORD, USERNAME, LiveSite
from tests.scoring.celery_helpers import slow_llm, wait_until
from tests.security.helpers import start_run
from tests.services import CeleryStack
from tests.voice.human.helpers import csrf_headers, logged_in_session

pytestmark = pytest.mark.slow(seconds=60)
SCENARIOS = ["eva_airline__1_1_3", "eva_airline__2_1_2"]


class StackSite(LiveSite):
    """A daphne server of the stack: its PostgreSQL, Redis and output directory, the celery executor."""

    def __init__(self, root: Path, stack: CeleryStack) -> None:
        super().__init__(root, {key: stack.env[key] for key in ("DATABASE_URL", "REDIS_URL")}
                         | {"EVASITE_EXECUTOR": "celery", "EVASITE_OUTPUT_DIR": str(stack.output_dir)})

    def prepare(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CeleryStack]:
    stack = CeleryStack(tmp_path_factory.mktemp("celery_site"), EVASITE_EXECUTOR="celery").start()
    stack.python("from django.contrib.auth import get_user_model\n"
                 f"get_user_model().objects.create_user({USERNAME!r}, password={PASSWORD!r})")
    try:
        yield stack
    finally:
        stack.stop()


def _status(stack: CeleryStack, run_id: int) -> dict:
    return json.loads(stack.python(
        "import json\nfrom scoring.models import Run\n"
        f"run = Run.objects.get(pk={run_id})\n"
        "print(json.dumps({'status': run.status, 'source': run.source, 'pid': run.coordinator_pid,\n"
        "    'rows': sorted([r.scenario_name, r.stop_reason] for r in run.results.all())}))"))


async def _post_form(session, site: LiveSite, path: str) -> int:
    async with session.post(f"{site.url}{path}", headers=csrf_headers(session, site), allow_redirects=False) as response:
        return response.status


async def test_a_run_started_on_one_web_process_is_cancelled_resumed_and_finished_across_restarts(
        stack: CeleryStack, tmp_path: Path) -> None:
    scenario_workers = stack.workers().start(1, concurrency=2)  # one process pool runs both scenarios
    coordinators = stack.workers().start(1, queue="evasite-coordinators")
    first, second = StackSite(tmp_path / "first", stack), StackSite(tmp_path / "second", stack)
    sessions = []
    try:
        scenario_workers.wait_ready()
        coordinators.wait_ready()
        for site in (first, second):
            site.prepare()
            site.start()
        with slow_llm(stack.root, 1.0) as url:
            a = await logged_in_session(first)
            b = await logged_in_session(second)
            sessions += [a, b]
            status, page, run_id = await start_run(
                a, first, scenarios=SCENARIOS, concurrency="2", duration="12", agent_model="listening",
                user_model="slow-passenger", user_llm_url=url)
            assert run_id is not None, (status, re.findall(r'class="error[^"]*"[^>]*>(.*?)<', page, re.S)[:3])
            first.stop(kill=True)  # the web process that received the form dies at once

            # The run is coordinated on a worker: killing the web process interrupted nothing.
            started = _status(stack, run_id)
            assert started["status"] == "running" and started["source"] == "web", started
            assert started["pid"] not in (None, first.process.pid), started
            async with b.get(f"{second.url}/runs/{run_id}/") as response:
                assert response.status == 200 and "Cancel" in await response.text()

            assert await _post_form(b, second, f"/runs/{run_id}/cancel/") == 302
            wait_until(lambda: _status(stack, run_id)["status"] == "interrupted", 60, "the cancelled run to stop")
            # Interrupted, not finished: the coordinator stopped before the run's end. (Its attempts
            # already on a worker may still go on to record their rows: a cancel only drops what is
            # queued, and a resume keeps what they scored.)

            assert await _post_form(b, second, f"/runs/{run_id}/resume/") == 302
            # Running again; or already finished when the attempts in flight at the cancel went on
            # to their end on the workers and the resume found every scenario complete.
            assert _status(stack, run_id)["status"] in ("running", "finished")
            first.start()  # the first web process comes back while the resumed run goes on
            await asyncio.to_thread(wait_until, lambda: _status(stack, run_id)["status"] != "running", 180,
                                    "the resumed run to finish", every=1.0)
        finished = _status(stack, run_id)
        assert finished["status"] == "finished", finished
        assert [name for name, _ in finished["rows"]] == sorted(SCENARIOS), finished  # each scored once
        a = await logged_in_session(first)
        sessions.append(a)
        async with a.get(f"{first.url}/runs/{run_id}/") as response:
            assert response.status == 200 and "finished" in (await response.text()).lower()
    finally:
        for session in sessions:
            await session.close()
        for site in (first, second):
            site.stop()
        coordinators.stop()
        scenario_workers.stop()
