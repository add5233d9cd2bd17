"""Which executor runs a run's scenarios (``run_eval --executor``, ``EVASITE_EXECUTOR``)."""
from __future__ import annotations

from scoring.runs.executors.base import Executor, RunError
from scoring.runs.executors.celery_queue import CeleryExecutor
from scoring.runs.executors.local import LocalExecutor
from scoring.runs.options import EXECUTORS

_EXECUTORS: dict[str, type[Executor]] = {"local": LocalExecutor, "celery": CeleryExecutor}


def get_executor(name: str) -> Executor:
    """The executor called ``name``."""
    if name not in _EXECUTORS:
        raise RunError(f"unknown executor {name!r} (choose from {', '.join(EXECUTORS)})")
    return _EXECUTORS[name]()
