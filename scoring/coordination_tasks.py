"""The Celery task that coordinates a run started from the site (``runs.remote_start``).

Apart from ``scoring.tasks`` on purpose: an attempt's worker never loads the runner, while this
task is the runner's own procedure. The workers load it through the ``CELERY_IMPORTS`` setting."""
from __future__ import annotations

import asyncio
from typing import Any

from celery import shared_task

from scoring.runs.remote_start import COORDINATE_TASK, coordinate


@shared_task(name=COORDINATE_TASK, acks_late=False, ignore_result=True)
def coordinate_run(*, payload: dict[str, Any]) -> str:
    """One site-started run, coordinated here to its end. Acknowledged on receipt: a run outlives
    any visibility timeout, and a second coordinator of the same run must never start; a worker
    lost mid-run leaves the run to the orphan sweep and Resume."""
    from scoring.web.launcher import execute

    return asyncio.run(coordinate(payload, execute))
