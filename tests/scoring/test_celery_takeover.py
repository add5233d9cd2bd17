"""A site run outlives the worker that coordinates it: with a real redis-server, PostgreSQL and
Celery workers, the coordinator worker is killed outright mid-run, another coordinator worker
takes the run over, and it finishes with each scenario scored once.

Each scenario lasts its 20 s duration cap (a stand-in passenger LLM answering after 1 s), so the
run is still going when its coordinator is killed, whatever the machine's load. On a loaded one a
scenario may end before the takeover (the rescuer's start, the 6 s lapse and the 3 s watch), and
then the resume loads it. The stall rule is off (``min_agent_turns=0``): the slow passenger leaves
the agent fewer than 3 turns, and with the rule on the resume re-runs such an attempt as stalled
(harness.md §10) instead of loading it."""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.scoring.celery_helpers import slow_llm, wait_until
from tests.services import CeleryStack

pytestmark = pytest.mark.slow(seconds=50)
SCENARIOS = ["eva_airline__1_1_3", "eva_airline__2_1_2"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CeleryStack]:
    # A lapse of 6 s: the watch looks every 3 s.
    stack = CeleryStack(tmp_path_factory.mktemp("takeover"), EVASITE_EXECUTOR="celery",
                        EVASITE_COORDINATOR_LAPSE="6").start()
    try:
        yield stack
    finally:
        stack.stop()


def _runs(stack: CeleryStack) -> list[dict]:
    return json.loads(stack.python(
        "import json\nfrom scoring.models import Run\n"
        "print(json.dumps([{'id': run.pk, 'status': run.status, 'pid': run.coordinator_pid,\n"
        "    'takeovers': run.takeovers, 'session': run.session_dir, 'error': run.error,\n"
        "    'rows': sorted([r.scenario_name, r.trial] for r in run.results.all())} for run in Run.objects.all()]))"))


def test_a_site_run_whose_coordinating_worker_is_killed_is_taken_over_and_finishes(stack: CeleryStack) -> None:
    scenario_workers = stack.workers().start(1, concurrency=2)
    doomed = stack.workers().start(1, queue="evasite-coordinators")
    rescuer = stack.workers()
    try:
        scenario_workers.wait_ready()
        doomed.wait_ready()
        with slow_llm(stack.root, 1.0) as url:
            # Sent as the site sends a run to the coordinators' queue (no web process needed here).
            stack.python(
                "from scoring.runs import remote_start\nfrom scoring.runs.options import RunOptions\n"
                f"remote_start.hand_over(RunOptions(domain='eva_airline', scenarios={SCENARIOS!r}, concurrency=2,\n"
                f"    duration=20, agent_model='listening', user_model='slow-passenger', user_llm_url={url!r},\n"
                f"    min_agent_turns=0, output_dir={str(stack.output_dir)!r}), None)")
            started = wait_until(lambda: [run for run in _runs(stack) if run["status"] == "running"], 60,
                                 "the run to start on the doomed worker")[0]
            rescuer.start(1, queue="evasite-coordinators").wait_ready()
            assert not _runs(stack)[0]["rows"], "the run must be killed part-way"
            doomed.kill(0)  # kill -9 of the worker and its pool: the coordinator dies with it

            done = wait_until(lambda: (lambda run: run if run["status"] == "finished" else None)(_runs(stack)[0]),
                              60, "the run to be taken over and finish", every=1.0)
        assert done["takeovers"] == 1 and done["pid"] != started["pid"], done
        assert [name for name, _ in done["rows"]] == SCENARIOS, done  # each scored once
        log = (Path(done["session"]) / "evaluation_log.txt").read_text()
        assert log.count("=== RESUMING") == 1
        assert "is gone; resuming it on the workers" in rescuer.log(0)
        for name in SCENARIOS:  # the attempts in flight at the kill were left to their live workers
            left = f"{name}: in flight on a live worker; left to it" in log
            ended = re.search(rf"{name}: completed \([^)]*\); loaded", log)  # ended before the takeover
            assert left or ended, log
        assert "moved" not in log and log.count(": started") == len(SCENARIOS), log  # none ran twice
    finally:
        for workers in (rescuer, doomed, scenario_workers):
            workers.stop()
