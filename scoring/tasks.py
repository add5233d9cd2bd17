"""Celery tasks of the ``celery`` executor (found by ``app.autodiscover_tasks``)."""
from __future__ import annotations

import asyncio
from typing import Any

from celery import shared_task

from scoring.runs.executors.celery_worker import RETRY, attempt_on_worker


@shared_task(bind=True, name="evasite.run_scenario_attempt", acks_late=True, reject_on_worker_lost=True,
             max_retries=None)
def run_scenario_attempt(self, *, run_id: int, session_dir: str, item: dict[str, Any], options: dict[str, Any],
                         retries: int = 0, reasons: list[str] | None = None) -> str:
    """One delivery of one scenario attempt. A discarded attempt is retried as a new message after
    the run's back-off, so every message stays within the duration cap the broker assumes."""
    reasons = list(reasons or [])
    delivery = asyncio.run(attempt_on_worker(run_id=run_id, session_dir=session_dir, item=item, options=options,
                                             retries=retries, reasons=reasons))
    if delivery.status == RETRY:
        raise self.retry(
            kwargs={"run_id": run_id, "session_dir": session_dir, "item": item, "options": options,
                    "retries": retries + 1, "reasons": [*reasons, delivery.retry_reason]},
            countdown=float(options.get("auto_retry_backoff_secs") or 0))
    return delivery.status
