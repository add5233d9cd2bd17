"""Shared by the celery fault, recovery and listen tests: waiting with deadlines, a stand-in
passenger LLM process, a run's workers and coordinators (all of them killed with the test), and
the check that a run is complete with one whole row per scenario."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.services import REPO, CeleryStack, CeleryWorkers, free_port, stop_process, wait_for_port


def wait_until(condition: Callable[[], object], timeout: float, what: str, *, every: float = 0.2) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


def new_session(stack: CeleryStack, before: list[Path]) -> Path:
    return wait_until(lambda: next(iter(set(stack.session_dirs()) - set(before)), None), 60, "the session directory")


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


@contextlib.contextmanager
def slow_llm(root: Path, delay: float) -> Iterator[str]:
    """``tests.slow_llm`` in its own process: every reply comes after ``delay`` seconds. Yields
    its base URL."""
    port = free_port()
    with open(root / f"slow_llm_{port}.log", "w") as log:
        server = subprocess.Popen([sys.executable, "-m", "tests.slow_llm", "--port", str(port), "--delay", str(delay)],
                                  cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    try:
        assert wait_for_port(port), "slow stand-in LLM did not start"
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop_process(server)


class FaultRun:
    """Ready workers and every coordinator a fault test starts; all of them end with the test.
    ``env`` overrides the stack's environment for the workers and the coordinators alike."""

    def __init__(self, stack: CeleryStack, workers: int = 2, **env: str) -> None:
        self.stack = stack
        self.env = env
        self.workers = CeleryWorkers(stack.root, {**stack.env, **env}).start(workers)
        self.processes: list[subprocess.Popen] = []

    def start(self, *args: str, log_name: str) -> tuple[subprocess.Popen, Path]:
        """A coordinator (``run_eval`` with ``args``) and the session directory it creates."""
        before = self.stack.session_dirs()
        proc = self.stack.run_eval(*args, log_name=log_name, **self.env)
        self.processes.append(proc)
        return proc, new_session(self.stack, before)

    def resume(self, session: Path, *args: str, log_name: str) -> subprocess.Popen:
        """A coordinator resuming ``session`` (``run_eval --resume TS`` plus ``args``)."""
        proc = self.stack.run_eval("--resume", session.name.removeprefix("eval_"), *args, log_name=log_name,
                                   **self.env)
        self.processes.append(proc)
        return proc

    def log(self, log_name: str) -> str:
        return (self.stack.root / log_name).read_text()[-3000:]


@contextlib.contextmanager
def fault_run(stack: CeleryStack, workers: int = 2, **env: str) -> Iterator[FaultRun]:
    run = FaultRun(stack, workers, **env)
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


def run_id_of(stack: CeleryStack, session: Path) -> int | None:
    """The id of the run row of ``session`` (None until the coordinator has opened it)."""
    out = stack.python(f"from scoring.models import Run\n"
                       f"print(Run.objects.filter(session_dir={str(session)!r}).values_list('pk', flat=True).first())")
    return None if out.strip() == "None" else int(out)
