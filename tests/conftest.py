"""Shared test set-up."""
from __future__ import annotations

import os


def _fresh_asgiref_executor() -> None:
    # A forked live server would otherwise inherit a dead single-thread executor (stack-notes §5).
    from concurrent.futures import ThreadPoolExecutor

    from asgiref.sync import SyncToAsync

    SyncToAsync.single_thread_executor = ThreadPoolExecutor(max_workers=1)


os.register_at_fork(after_in_child=_fresh_asgiref_executor)
