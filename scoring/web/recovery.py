"""Runs left "running" by a coordinator that died (a server restart, a killed ``run_eval``, a
Celery worker lost with its coordination task) are marked interrupted, so the page offers Resume
instead of a spinner that never ends.

A run of this host is judged by its coordinator's pid; a run of any other host by its heartbeat
(``scoring.runs.liveness``). A CLI run still going in another process is left alone.
"""
from __future__ import annotations

import socket
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from scoring.models import Run
from scoring.runs.liveness import Coordinator, coordinator_of, gone_reason


def recover_orphaned_runs() -> list[int]:
    """Mark every orphaned running run interrupted; returns their ids."""
    this_host = socket.gethostname()
    lapsed = timezone.now() - timedelta(seconds=settings.EVASITE_COORDINATOR_LAPSE)
    recovered = []
    candidates = Run.objects.filter(Q(coordinator_host=this_host) | Q(coordinator_seen_at__lt=lapsed),
                                    status=Run.Status.RUNNING)
    for run in candidates.only("pk", "timestamp", "coordinator_host", "coordinator_pid", "coordinator_seen_at"):
        if coordinator_of(run, this_host) is not Coordinator.GONE:
            continue
        with transaction.atomic():
            # Unchanged since it was read: a resume that took the run over in the meantime wins.
            updated = Run.objects.filter(
                pk=run.pk, status=Run.Status.RUNNING, coordinator_host=run.coordinator_host,
                coordinator_pid=run.coordinator_pid, coordinator_seen_at=run.coordinator_seen_at,
            ).update(status=Run.Status.INTERRUPTED, finished_at=timezone.now(),
                     error=f"interrupted: {gone_reason(run, this_host)}; resume with --resume {run.timestamp}")
        if updated:
            recovered.append(run.pk)
    return recovered


_swept = False


def recover_once(**_: object) -> None:
    """``request_started`` receiver: sweep on the first request this server process handles."""
    global _swept
    if _swept:
        return
    _swept = True
    recover_orphaned_runs()
