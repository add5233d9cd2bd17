"""Celery tasks of the ``celery`` executor (found by ``app.autodiscover_tasks``). The coordinator
sends them by name (``executors.celery_queue``), so it never imports the worker's side."""
from __future__ import annotations

import asyncio
from typing import Any

from celery import shared_task

from scoring.runs.executors.celery_worker import attempt_on_worker
from scoring.runs.executors.plan import ATTEMPT_TASK


@shared_task(name=ATTEMPT_TASK, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_scenario_attempt(**payload: Any) -> str:
    """One delivery of one queued scenario: its attempts with automatic retry, its row, its news
    on the run's feed (``executors.plan.plan_payload`` says what the message carries)."""
    return asyncio.run(attempt_on_worker(payload))
