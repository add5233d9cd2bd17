"""Shared test set-up."""
from __future__ import annotations

import os


def _fresh_asgiref_executor() -> None:
    # A forked live server would otherwise inherit a dead single-thread executor (stack-notes §5).
    from concurrent.futures import ThreadPoolExecutor

    from asgiref.sync import SyncToAsync

    SyncToAsync.single_thread_executor = ThreadPoolExecutor(max_workers=1)


os.register_at_fork(after_in_child=_fresh_asgiref_executor)


def pytest_sessionfinish(session, exitstatus) -> None:  # noqa: ARG001 - pytest hook signature
    """Remove the WAL side files SQLite leaves next to this run's (already dropped) test DB."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for suffix in ("-wal", "-shm"):
        side = root / f"test_db_{os.getpid()}.sqlite3{suffix}"
        if side.exists() and not (root / f"test_db_{os.getpid()}.sqlite3").exists():
            side.unlink()
