"""``manage.py`` run as a user runs it: a process of its own (forked warm, ``tests.warm_python``), its output
captured."""
from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests import warm_python

REPO = Path(__file__).resolve().parents[1]


def manage(*args: str, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    return warm_python.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True,
                           text=True, timeout=timeout)


def manage_side_by_side(calls: list[tuple[list[str], dict[str, str]]]) -> list[tuple[subprocess.CompletedProcess, float]]:
    """Independent calls at once, each with its own wall time: a start-up is seconds of imports,
    and calls that are refused only wait on that."""
    def timed(call: tuple[list[str], dict[str, str]]) -> tuple[subprocess.CompletedProcess, float]:
        started = time.monotonic()
        proc = manage(*call[0], env=call[1])
        return proc, time.monotonic() - started

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(timed, calls))
