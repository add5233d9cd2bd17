"""``run_eval --processes N``: the local executor's attempts in worker processes of this machine,
the rows in the same SQLite database. Real processes: the run's coordinator and its workers.

One scenario's worker is killed (``kill -9``) mid-attempt: the run ends interrupted and says
which worker and attempt it lost; ``--resume`` finishes it, each scenario scored once, and the
summary is the one an in-process run of the same scenarios writes."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import warm_python
from tests.scoring.celery_helpers import slow_llm, wait_until
from tests.scoring.test_run_eval import REPO, _gone, _without_wall_clock, manage, stored_rows
from tests.sqlite_template import migrated_sqlite

NAMES = ["eva_airline__1_1_3", "eva_airline__voluntary_date_change"]


@pytest.mark.slow(seconds=50)
def test_a_worker_killed_mid_attempt_interrupts_the_run_and_resume_finishes_it(tmp_path: Path) -> None:
    env = {**os.environ, "EVASITE_SQLITE_PATH": str(migrated_sqlite(tmp_path / "db.sqlite3"))}
    out = tmp_path / "out"
    with slow_llm(tmp_path, 1.0) as url:
        # Each scenario lasts its 6 s cap: the passenger answers a second after every line.
        flags = ["run_eval", "--modality", "text", "--scenarios", *NAMES, "--processes", "2", "--concurrency", "2",
                 "--user-model", "slow-passenger", "--user-llm-url", url, "--duration", "6",
                 "--output-dir", str(out)]
        proc = warm_python.Popen([sys.executable, "manage.py", *flags], cwd=REPO, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        session = wait_until(lambda: next(out.glob("eval_*"), None), 60, "the session directory")
        log = session / "evaluation_log.txt"
        pids = wait_until(lambda: re.search(r"Running on 2 worker process\(es\): pids (\d+), (\d+) "
                                            r"\(forked from this process\)", log.read_text()),
                          60, "the worker processes forked by run_eval")
        wait_until(lambda: log.read_text().count(": started") >= 2, 60, "both workers' first attempts")
        os.kill(int(pids.group(1)), signal.SIGKILL)
        assert proc.wait(timeout=60) == 1
        error = proc.stderr.read()
        assert f"worker process {pids.group(1)} ended" in error and "resume with --resume" in error, error[-2000:]
        assert not (session / "all_summary.txt").exists()
        assert stored_rows(env, session)[0] == "interrupted"

        resumed = manage(*flags, "--resume", session.name.removeprefix("eval_"), env=env)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert stored_rows(env, session) == ["finished", *sorted(NAMES)]  # one row each
    assert [m["scenario_name"] for m in json.loads((session / "all_metrics.json").read_text())] == NAMES
    text = log.read_text()
    for name in NAMES:  # the workers' log lines reached the coordinator's log
        assert f"{name}: finished" in text


# run_eval with a second thread alive: a fork is not safe then, so its workers start cold.
WITH_A_THREAD = ("import sys, threading, time; threading.Thread(target=time.sleep, args=(600,), daemon=True).start(); "
                 "from django.core.management import execute_from_command_line; execute_from_command_line(sys.argv[1:])")


@pytest.mark.slow(seconds=20)
def test_the_same_run_in_worker_processes_forked_or_started_writes_the_same_summary(tmp_path: Path) -> None:
    env = {**os.environ, "EVASITE_SQLITE_PATH": str(migrated_sqlite(tmp_path / "db.sqlite3"))}
    flags = ["run_eval", "--modality", "text", "--scenarios", *NAMES, "--trials", "2", "--concurrency", "3"]
    summaries, how = [], []
    for label, processes, command in (("in process", "1", ["manage.py"]), ("forked", "2", ["manage.py"]),
                                      ("started", "2", ["-c", WITH_A_THREAD, "manage.py"])):
        out = tmp_path / label.replace(" ", "_")
        done = warm_python.run([sys.executable, *command, *flags, "--processes", processes, "--output-dir", str(out)],
                               cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        summaries.append(_without_wall_clock(next(out.glob("eval_*/all_summary.txt")).read_text()))
        how.append(re.findall(r"worker process\(es\): pids [\d, ]+ \((.+)\)",
                              next(out.glob("eval_*/evaluation_log.txt")).read_text()))
    assert how == [[], ["forked from this process"], ["started as new interpreters"]]
    assert summaries[0] == summaries[1] == summaries[2]


def test_a_forked_worker_dies_with_its_coordinator() -> None:
    """However the coordinator ends (here ``os._exit``, as good as ``kill -9`` for the child), the
    kernel kills its forked workers: none goes on with an attempt a ``--resume`` will run again."""
    code = """
import os, time
from scoring.runs.executors.forked import _die_with_parent
coordinator = os.getpid()
child = os.fork()
if child == 0:
    _die_with_parent(coordinator)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    time.sleep(120)
    os._exit(0)
print(child, flush=True)
os._exit(0)
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    worker, deadline = int(done.stdout), time.monotonic() + 20
    while not _gone(worker):
        assert time.monotonic() < deadline, "the worker outlived its coordinator"
        time.sleep(0.01)
