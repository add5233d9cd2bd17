"""The Celery task that coordinates a run started from the site (``runs.remote_start``), and the
coordinator workers' watch that resumes a run whose coordinator died (``runs.takeover``).

Apart from ``scoring.tasks`` on purpose: an attempt's worker never loads the runner, while this
task is the runner's own procedure. The workers load it through the ``CELERY_IMPORTS`` setting."""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.db import connection

from scoring.runs.remote_start import COORDINATE_TASK, coordinate, hand_over
from scoring.runs.takeover import take_over_orphans

log = logging.getLogger(__name__)


@shared_task(name=COORDINATE_TASK, acks_late=False, ignore_result=True)
def coordinate_run(*, payload: dict[str, Any]) -> str:
    """One site-started run, coordinated here to its end. Acknowledged on receipt: a run outlives
    any visibility timeout, and a second coordinator of the same run must never start; a worker
    lost mid-run leaves the run to the other coordinator workers' watch (below)."""
    from scoring.web.launcher import execute

    return asyncio.run(coordinate(payload, execute))


@worker_ready.connect
def watch_for_lost_coordinators(sender: Any, **_: Any) -> None:
    """A worker serving the coordinators' queue watches for site runs whose coordinator died
    (``runs.takeover``), so a run outlives the worker that coordinated it."""
    if settings.EVASITE_CELERY_COORDINATOR_QUEUE in sender.app.amqp.queues.consume_from:
        threading.Thread(target=_watch, name="evasite-takeover", daemon=True).start()


def _watch() -> None:
    """Look every half lapse (a gone pid on this host is seen at the next look; a silent
    coordinator elsewhere once its lapse is over). The thread's own connection is closed after
    each look, so a database restart in between costs nothing."""
    interval = settings.EVASITE_COORDINATOR_LAPSE / 2
    while True:
        try:
            take_over_orphans(hand_over)
        except Exception:
            log.exception("the watch for lost coordinators failed; trying again in %.0f s", interval)
        finally:
            connection.close()
        time.sleep(interval)
