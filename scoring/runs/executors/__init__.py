"""Executors of scenario attempts (architecture.md, Process model): ``local`` asyncio tasks in
the coordinating process, or ``celery`` tasks on a Redis broker run by workers."""
from __future__ import annotations

from scoring.runs.executors.base import Executor, RunError
from scoring.runs.options import EXECUTORS

__all__ = ("EXECUTORS", "get_executor")


def get_executor(name: str) -> Executor:
    """The executor called ``name`` (``run_eval --executor``, ``EVASITE_EXECUTOR``)."""
    if name == "local":
        from scoring.runs.executors.local import LocalExecutor

        return LocalExecutor()
    if name == "celery":
        from scoring.runs.executors.celery_queue import CeleryExecutor

        return CeleryExecutor()
    raise RunError(f"unknown executor {name!r} (choose from {', '.join(EXECUTORS)})")
