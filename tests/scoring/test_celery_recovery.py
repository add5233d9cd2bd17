"""Recovery on Celery with the default settings (issue 18), with real processes: redis-server,
PostgreSQL, ``celery worker`` and ``run_eval``. The broker's visibility timeout is 900 + 120 s
here, so a scenario that comes back within seconds was brought back by the coordinator watching
the leases. The passenger is a stand-in LLM that never answers, so an attempt lasts exactly its
``--duration`` (it is surely "in the middle" when a process is killed)."""
from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.scoring.celery_helpers import assert_complete_once, fault_run, kill_group, slow_llm, wait_until
from tests.services import REPO, CeleryStack
from tests import warm_python

pytestmark = pytest.mark.slow(seconds=35)  # real workers killed and waited out

SCENARIOS = ["eva_airline__1_1_3", "eva_airline__2_1_2", "eva_airline__voluntary_date_change"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CeleryStack]:
    stack = CeleryStack(tmp_path_factory.mktemp("recovery"))
    try:
        yield stack.start()
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def silent_passenger(stack: CeleryStack) -> Iterator[str]:
    with slow_llm(stack.root, 3600) as url:
        yield url


def flags(passenger_url: str, duration: int, executor: str = "celery") -> list[str]:
    return ["--modality", "text", "--user-model", "slow-passenger", "--user-llm-url", passenger_url,
            "--duration", str(duration), "--inactivity-timeout", "0", "--min-agent-turns", "0",
            "--executor", executor]


def holders(run, count: int = 1) -> list[int]:
    """Indexes of the workers that received a task (waits until ``count`` of them have)."""
    return wait_until(lambda: (lambda found: found if len(found) >= count else None)(
        [index for index in range(len(run.workers.procs)) if "received" in run.workers.log(index)]),
        60, "a worker to receive the scenario")


def test_killed_workers_scenario_runs_again_within_30s_and_is_scored_once(stack: CeleryStack,
                                                                        silent_passenger: str) -> None:
    name = SCENARIOS[0]
    with fault_run(stack) as run:
        proc, session = run.start("--scenarios", name, *flags(silent_passenger, 8), log_name="kill.log")
        wait_until((session / name / "bridge_log.txt").exists, 120, "the scenario to start")
        victim = holders(run)[0]
        run.workers.kill(victim)
        killed_at = time.monotonic()
        wait_until(lambda: list(session.glob(f"{name}.killed.*")) and (session / name / "bridge_log.txt").exists(),
                   60, "the scenario to run again", every=0.05)
        again = time.monotonic() - killed_at
        assert again <= 30, f"running again {again:.1f}s after the kill"
        assert proc.wait(timeout=max(1.0, 60 - (time.monotonic() - killed_at))) == 0, run.log("kill.log")
        assert time.monotonic() - killed_at <= 60
        assert "received" in run.workers.log(1 - victim)
        moved = sorted(session.glob(f"{name}.killed.*"))
        assert len(moved) == 1 and not (moved[0] / "metrics.json").exists()  # the dead attempt, set aside
        log = (session / "evaluation_log.txt").read_text()
        assert f"{name}: its lease lapsed with no result (the worker is gone); dispatched again" in log
        assert log.count(f"{name}: finished ") == 1
        assert_complete_once(stack, session, [name])


def test_local_resume_of_a_celery_run_leaves_live_workers_their_scenarios(stack: CeleryStack,
                                                                         silent_passenger: str) -> None:
    """The coordinator dies while both workers run a scenario: a local resume waits for them
    (their leases are live) instead of moving their directories aside and running them twice."""
    with fault_run(stack) as run:
        proc, session = run.start("--scenarios", *SCENARIOS, *flags(silent_passenger, 40), log_name="lease.log")
        running = wait_until(lambda: (lambda found: found if len(found) == 2 else None)(
            sorted(path.parent.name for path in session.glob("*/bridge_log.txt"))), 120, "two scenarios to start")
        holders(run, 2)
        kill_group(proc)
        resumed = run.resume(session, "--scenarios", *SCENARIOS, *flags(silent_passenger, 40, "local"),
                             "--concurrency", "3", log_name="lease_resume.log")
        assert resumed.wait(timeout=300) == 0, run.log("lease_resume.log")
        log = (session / "evaluation_log.txt").read_text()
        for name in running:
            assert f"{name}: in flight on a live worker; left to it" in log
        assert not list(session.glob("*.killed.*"))  # nobody's attempt was taken over or run twice
        assert sum(run.workers.log(index).count("succeeded") for index in range(2)) >= 2
        assert_complete_once(stack, session, SCENARIOS)


CLOSE_AT_THE_END = """
import sys
from scoring import services
from scoring.models import Run
run = Run.objects.create(timestamp="20260101_000000", session_dir={session!r})
print("ready", flush=True)
sys.stdin.readline()  # the database is stopped now
services.run_prune_results(run_id=run.pk, keep=[])
services.run_close(run_id=run.pk, status="finished", summary_text="done", success_rate=1.0)
print(Run.objects.get(pk=run.pk).status, flush=True)
"""


def test_the_runs_last_writes_outlast_a_postgres_blip(stack: CeleryStack, tmp_path: Path) -> None:
    """PostgreSQL away just as a run ends: pruning and closing the run wait for it (retried)."""
    prelude = "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'evasite.settings'); django.setup()\n"
    errors = tmp_path / "closer.err"
    with open(errors, "w") as stderr:
        closer = warm_python.Popen([sys.executable, "-c", prelude + CLOSE_AT_THE_END.format(session=str(tmp_path))],
                                   cwd=REPO, env=stack.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=stderr, text=True)
    try:
        assert closer.stdout.readline() == "ready\n"
        stack.postgres.stop()
        try:
            closer.stdin.write("\n")
            closer.stdin.flush()
            wait_until(lambda: "database unavailable" in errors.read_text(), 30, "the write to be retried")
        finally:
            stack.postgres.start()
        assert closer.stdout.readline() == "finished\n"
        assert closer.wait(timeout=60) == 0
    finally:
        if closer.poll() is None:
            closer.kill()
            closer.wait()

