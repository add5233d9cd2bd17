"""Faults the celery executor must survive, each with real processes: redis-server (persistent,
as a production broker), a PostgreSQL cluster, ``celery worker`` processes and ``run_eval``
coordinators, killed or restarted mid-run. Scenarios are text modality with a slow stand-in
passenger (tests.slow_llm), so each is "in the middle" for several seconds."""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.services import REPO, CeleryStack, free_port, stop_process, wait_for_port

SCENARIOS = ["eva_airline__1_1_3", "eva_airline__2_1_2", "eva_airline__voluntary_date_change"]
# A short duration cap keeps the broker's visibility timeout (cap + grace = 15 s) test-sized.
pytestmark = pytest.mark.slow  # each fault is tens of seconds of real processes; handed out first

SETTINGS = {"EVASITE_CELERY_DURATION_CAP": "12", "EVASITE_CELERY_VISIBILITY_GRACE": "3"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CeleryStack]:
    stack = CeleryStack(tmp_path_factory.mktemp("faults"), **SETTINGS)
    try:
        yield stack.start()
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def slow_flags(stack: CeleryStack) -> Iterator[list[str]]:
    port = free_port()
    with open(stack.root / "slow_llm.log", "w") as log:
        server = subprocess.Popen([sys.executable, "-m", "tests.slow_llm", "--port", str(port), "--delay", "1.0"],
                                  cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    try:
        assert wait_for_port(port), "slow stand-in LLM did not start"
        yield ["--modality", "text", "--user-model", "slow-passenger", "--user-llm-url",
               f"http://127.0.0.1:{port}/v1", "--duration", "12", "--executor", "celery"]
    finally:
        stop_process(server)


def wait_until(condition: Callable[[], object], timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def new_session(stack: CeleryStack, before: list[Path]) -> Path:
    return wait_until(lambda: next(iter(set(stack.session_dirs()) - set(before)), None), 60, "the session directory")


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


class FaultRun:
    """Two ready workers and every coordinator a fault test starts; all of them end with the test."""

    def __init__(self, stack: CeleryStack) -> None:
        self.stack = stack
        self.workers = stack.workers().start(2)
        self.processes: list[subprocess.Popen] = []

    def start(self, *args: str, log_name: str) -> tuple[subprocess.Popen, Path]:
        """A coordinator (``run_eval`` with ``args``) and the session directory it creates."""
        before = self.stack.session_dirs()
        proc = self.stack.run_eval(*args, log_name=log_name)
        self.processes.append(proc)
        return proc, new_session(self.stack, before)

    def resume(self, session: Path, *args: str, log_name: str) -> subprocess.Popen:
        """A coordinator resuming ``session`` (``run_eval --resume TS`` plus ``args``)."""
        proc = self.stack.run_eval("--resume", session.name.removeprefix("eval_"), *args, log_name=log_name)
        self.processes.append(proc)
        return proc

    def log(self, log_name: str) -> str:
        return (self.stack.root / log_name).read_text()[-3000:]


@contextlib.contextmanager
def fault_run(stack: CeleryStack) -> Iterator[FaultRun]:
    run = FaultRun(stack)
    try:
        run.workers.wait_ready()
        yield run
    finally:
        for proc in run.processes:
            if proc.poll() is None:
                kill_group(proc)
        run.workers.stop()


ROWS = """
import json
from scoring.core.canonical import db_hash
from scoring.models import Run
run = Run.objects.get(session_dir={session!r})
rows = list(run.results.order_by("position"))
print(json.dumps({{"status": run.status, "completed": run.completed_scenarios, "names": [r.scenario_name for r in rows],
                  "whole": all(r.metrics == json.load(open(r.directory + "/metrics.json"))
                               and db_hash(r.final_db) == r.metrics["db_state_actual_hash"] for r in rows)}}))
"""


def assert_complete_once(stack: CeleryStack, session: Path, names: list[str]) -> None:
    """Finished, one whole row per scenario (metrics equal to the file, final DB present)."""
    rows = json.loads(stack.python(ROWS.format(session=str(session))))
    assert rows == {"status": "finished", "completed": len(names), "names": names, "whole": True}
    assert len(json.loads((session / "all_metrics.json").read_text())) == len(names)


def loaded_on_resume(session: Path) -> list[str]:
    """The scenarios the last resume of ``session`` found complete and loaded (its log says so)."""
    log = (session / "evaluation_log.txt").read_text()
    resumed = log.rsplit("=== RESUMING", 1)[1]
    return re.findall(r"^\S+ \S+ (\S+): completed \(.*\); loaded$", resumed, re.M)


def test_worker_killed_mid_scenario_is_redelivered_and_scored_once(stack: CeleryStack, slow_flags: list[str]) -> None:
    name = SCENARIOS[0]
    with fault_run(stack) as run:
        proc, session = run.start("--scenarios", name, *slow_flags, log_name="kill_worker.log")
        wait_until(lambda: (session / name / "bridge_log.txt").exists(), 60, "the scenario to start")
        time.sleep(1.0)
        victim = next(index for index in range(2) if "received" in run.workers.log(index))
        run.workers.kill(victim)
        assert proc.wait(timeout=150) == 0, run.log("kill_worker.log")
        assert "succeeded" in run.workers.log(1 - victim)  # redelivered to the other worker
        moved = sorted(session.glob(f"{name}.killed.*"))
        assert len(moved) == 1 and not (moved[0] / "metrics.json").exists()  # the dead attempt, set aside
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
        # The workers outlive the coordinator, so more scenarios may finish before the resume looks:
        # it loads at least those finished at the kill, and says how many it loaded.
        loaded = loaded_on_resume(session)
        assert set(finished) <= set(loaded), (finished, loaded)
        assert f"{len(loaded)} already complete" in (stack.root / "resume.log").read_text()
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
