"""A warm child behaves as the cold process it stands in for: its own arguments, environment,
working directory, output, exit status and signals, and the project imported fresh from its
environment."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import warm_python

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("run", [subprocess.run, warm_python.run], ids=["cold", "warm"])
def test_arguments_environment_directory_output_and_status_are_the_childs_own(run, tmp_path: Path) -> None:
    code = ("import os, sys; print(sys.argv[1:], os.getcwd(), os.environ.get('ONLY_HERE'), "
            "os.environ.get('DJANGO_SETTINGS_MODULE')); print('to stderr', file=sys.stderr); sys.exit(3)")
    done = run([sys.executable, "-c", code, "a", "b c"], cwd=tmp_path, env={"ONLY_HERE": "1", "PATH": "/usr/bin"},
               capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert done.stdout == f"['a', 'b c'] {tmp_path} 1 None\n"
    assert done.stderr == "to stderr\n"


def test_manage_py_reads_its_settings_from_the_environment_it_is_given(tmp_path: Path) -> None:
    env = {**os.environ, "EVAL_DATA_ROOT": str(tmp_path / "nowhere"), "EVASITE_SQLITE_PATH": str(tmp_path / "db")}
    cold, warm = (run([sys.executable, "manage.py", "run_eval", "--list-domains", "--skip-checks"], cwd=REPO, env=env,
                      capture_output=True, text=True, timeout=120) for run in (subprocess.run, warm_python.run))
    assert (warm.returncode, warm.stdout) == (cold.returncode, cold.stdout)


def test_an_uncaught_exception_and_a_killed_group_end_as_in_a_cold_process(tmp_path: Path) -> None:
    failed = warm_python.run([sys.executable, "-c", "raise ValueError('boom')"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=60)
    assert failed.returncode == 1 and "ValueError: boom" in failed.stderr
    log = tmp_path / "log.txt"
    with open(log, "w") as out:
        sleeper = warm_python.Popen([sys.executable, "-c", "print('up', flush=True); import time; time.sleep(60)"],
                                    cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while "up" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sleeper.poll() is None and os.getpgid(sleeper.pid) == sleeper.pid  # its own session
    os.killpg(sleeper.pid, signal.SIGKILL)
    assert sleeper.wait(timeout=30) == -signal.SIGKILL
    interrupted = warm_python.Popen([sys.executable, "-c", "import time; time.sleep(60)"], cwd=tmp_path,
                                    stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    interrupted.send_signal(signal.SIGINT)
    assert interrupted.wait(timeout=30) == -signal.SIGINT  # KeyboardInterrupt, then death by SIGINT, as CPython
