"""Faults the celery executor must survive, each with real processes: redis-server (persistent,
as a production broker), a PostgreSQL cluster, ``celery worker`` processes and ``run_eval``
coordinators, killed or restarted mid-run. Scenarios are text modality with a slow stand-in
passenger (tests.slow_llm), so each is "in the middle" for several seconds."""
from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest

from tests.scoring.celery_helpers import assert_complete_once, fault_run, kill_group, new_session, slow_llm, wait_until
from tests.services import CeleryStack

SCENARIOS = ["eva_airline__1_1_3", "eva_airline__2_1_2", "eva_airline__voluntary_date_change"]
# A short duration cap keeps the broker's visibility timeout (cap + grace = 32 s) test-sized. The
# grace outlasts a dead worker's lease (15 s after its last renewal), as the default's 120 s does:
# with less, a redelivery could find the dead worker's lease still live, step back, and leave the
# scenario to nobody.
SETTINGS = {"EVASITE_CELERY_DURATION_CAP": "12", "EVASITE_CELERY_VISIBILITY_GRACE": "20"}


pytestmark = pytest.mark.slow(seconds=40)  # each fault is tens of seconds of real processes; handed out first

@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CeleryStack]:
    stack = CeleryStack(tmp_path_factory.mktemp("faults"), **SETTINGS)
    try:
        yield stack.start()
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def slow_flags(stack: CeleryStack) -> Iterator[list[str]]:
    with slow_llm(stack.root, 1.0) as url:
        yield ["--modality", "text", "--user-model", "slow-passenger", "--user-llm-url", url, "--duration", "12",
               "--executor", "celery"]


def test_with_the_coordinator_gone_too_the_brokers_redelivery_finishes_the_scenario(stack: CeleryStack,
                                                                                   slow_flags: list[str]) -> None:
    """The last resort: a worker and the coordinator killed together, so nobody watches the
    leases. The broker redelivers the task after its visibility timeout (32 s here) to the other
    worker, which moves the dead attempt aside and finishes it; a resume then finds it complete."""
    name = SCENARIOS[0]
    with fault_run(stack) as run:
        proc, session = run.start("--scenarios", name, *slow_flags, log_name="last_resort.log")
        wait_until((session / name / "bridge_log.txt").exists, 60, "the scenario to start")
        victim = wait_until(lambda: [index for index in range(2) if "received" in run.workers.log(index)], 60,
                            "a worker to receive the scenario")[0]
        kill_group(proc)
        run.workers.kill(victim)
        wait_until((session / name / "metrics.json").exists, 120, "the redelivered scenario to finish")
        assert "received" in run.workers.log(1 - victim)
        moved = sorted(session.glob(f"{name}.killed.*"))
        assert len(moved) == 1 and not (moved[0] / "metrics.json").exists()  # the dead attempt, set aside
        resumed = run.resume(session, "--scenarios", name, *slow_flags, log_name="last_resort_resume.log")
        assert resumed.wait(timeout=150) == 0, run.log("last_resort_resume.log")
        assert "1 already complete" in (stack.root / "last_resort_resume.log").read_text()
        assert_complete_once(stack, session, [name])


def test_killed_coordinator_resumes_without_rerunning_finished(stack: CeleryStack, slow_flags: list[str]) -> None:
    with fault_run(stack) as run:
        proc, session = run.start("--scenarios", *SCENARIOS, *slow_flags, log_name="kill_coordinator.log")
        wait_until(lambda: list(session.glob("*/metrics.json")), 90, "a first finished scenario")
        kill_group(proc)
        finished = {path.parent.name: path.stat().st_mtime_ns for path in session.glob("*/metrics.json")}
        resumed = run.resume(session, "--scenarios", *SCENARIOS, *slow_flags, log_name="resume.log")
        assert resumed.wait(timeout=150) == 0, run.log("resume.log")
        assert {name: (session / name / "metrics.json").stat().st_mtime_ns for name in finished} == finished
        assert not list(session.glob("*.killed.*"))  # nothing was run twice
        # Workers live on, so more may have finished by the time the resume looked.
        loaded = int(re.search(r"(\d+) already complete", (stack.root / "resume.log").read_text()).group(1))
        assert len(finished) <= loaded <= len(SCENARIOS)
        assert_complete_once(stack, session, SCENARIOS)


def test_redis_restarted_mid_run_completes(stack: CeleryStack, slow_flags: list[str]) -> None:
    with fault_run(stack) as run:
        proc, session = run.start("--scenarios", *SCENARIOS, *slow_flags, log_name="redis_restart.log")
        wait_until(lambda: list(session.glob("*/bridge_log.txt")), 60, "a scenario to start")
        time.sleep(1.0)
        stack.redis.stop()
        time.sleep(3.0)
        stack.redis.start()
        assert proc.wait(timeout=150) == 0, run.log("redis_restart.log")
        assert_complete_once(stack, session, SCENARIOS)


def test_postgres_briefly_unavailable_while_workers_record(stack: CeleryStack, slow_flags: list[str]) -> None:
    with fault_run(stack) as run:
        proc, session = run.start("--scenarios", *SCENARIOS, *slow_flags, log_name="pg_outage.log")
        wait_until(lambda: list(session.glob("*/bridge_log.txt")), 60, "a scenario to start")
        stack.postgres.stop()
        try:  # down for longer than a scenario takes, so a worker records while it is away
            wait_until(lambda: list(session.glob("*/metrics.json")), 60, "a scenario to finish")
            time.sleep(2.0)
        finally:
            stack.postgres.start()
        assert proc.wait(timeout=150) == 0, run.log("pg_outage.log")
        assert any("database unavailable" in run.workers.log(index) for index in range(2))
        assert_complete_once(stack, session, SCENARIOS)


def test_coordinator_and_workers_lost_then_local_resume(stack: CeleryStack, slow_flags: list[str]) -> None:
    """The whole machine gone: the local executor resumes a celery run, moving the dead workers'
    unfinished attempts aside and keeping the finished ones."""
    with fault_run(stack) as run:
        proc, session = run.start("--scenarios", *SCENARIOS, *slow_flags, log_name="lost.log")
        wait_until(lambda: list(session.glob("*/metrics.json")), 90, "a first finished scenario")
        kill_group(proc)
        for index in range(2):
            run.workers.kill(index)
        finished = {path.parent.name: path.stat().st_mtime_ns for path in session.glob("*/metrics.json")}
        unfinished = [name for name in SCENARIOS if (session / name).is_dir() and name not in finished]
        local_flags = [flag for flag in slow_flags if flag not in ("--executor", "celery")]
        resumed = run.resume(session, "--scenarios", *SCENARIOS, *local_flags, "--executor", "local",
                             "--concurrency", "3", log_name="lost_resume.log")
        assert resumed.wait(timeout=150) == 0, run.log("lost_resume.log")
        assert {name: (session / name / "metrics.json").stat().st_mtime_ns for name in finished} == finished
        assert sorted(path.name.split(".killed.")[0] for path in session.glob("*.killed.*")) == sorted(unfinished)
        assert_complete_once(stack, session, SCENARIOS)


def test_no_worker_progress_ends_interrupted_and_resumes_cleanly(stack: CeleryStack) -> None:
    """No worker consuming the queue: the coordinator gives up with a message instead of hanging,
    and the same run resumes once workers are there."""
    name = SCENARIOS[1]
    quick = {"EVASITE_CELERY_DURATION_CAP": "2", "EVASITE_CELERY_VISIBILITY_GRACE": "1"}  # gives up after 33 s
    flags = ["--scenarios", name, "--modality", "text", "--duration", "2", "--executor", "celery"]
    before = stack.session_dirs()
    proc = stack.run_eval(*flags, log_name="no_workers.log", **quick)
    workers = None
    resumed = None
    try:
        assert proc.wait(timeout=120) == 1
        session = new_session(stack, before)
        stamp = session.name.removeprefix("eval_")
        message = (stack.root / "no_workers.log").read_text()
        assert "no worker progress" in message and f"resume with --resume {stamp}" in message
        assert json.loads(stack.python(f"from scoring.models import Run; import json; "
                                       f"print(json.dumps(Run.objects.get(session_dir={str(session)!r}).status))"))\
            == "interrupted"
        workers = stack.workers().start(1)
        workers.wait_ready()
        resumed = stack.run_eval("--resume", stamp, *flags, log_name="no_workers_resume.log", **quick)
        assert resumed.wait(timeout=120) == 0, (stack.root / "no_workers_resume.log").read_text()[-3000:]
        assert_complete_once(stack, session, [name])
    finally:
        for process in (proc, resumed):
            if process is not None and process.poll() is None:
                kill_group(process)
        if workers is not None:
            workers.stop()
