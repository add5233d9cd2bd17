"""Runs left "running" by a coordinator that died (a server restart, a killed ``run_eval``) are
marked interrupted, so the page offers Resume instead of a spinner that never ends.

A run records the host and pid of its coordinating process; only a run of this host whose process
is gone is touched, so a CLI run still going in another process is left alone.
"""
from __future__ import annotations

import os
import socket
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from scoring.models import Run


def process_alive(pid: int) -> bool:
    """Whether ``pid`` names a live (not zombie) process on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in {"Z", "X"}


def is_orphaned(*, host: str, pid: int | None, this_host: str) -> bool:
    """A running run is orphaned when its coordinator ran here and is no longer alive."""
    if pid is None or host != this_host:
        return False  # unknown or elsewhere: cannot tell, leave it
    return pid != os.getpid() and not process_alive(pid)


def recover_orphaned_runs() -> list[int]:
    """Mark every orphaned running run interrupted; returns their ids."""
    this_host = socket.gethostname()
    recovered = []
    candidates = Run.objects.filter(status=Run.Status.RUNNING, coordinator_host=this_host)
    for run in candidates.only("pk", "timestamp", "coordinator_host", "coordinator_pid"):
        if not is_orphaned(host=run.coordinator_host, pid=run.coordinator_pid, this_host=this_host):
            continue
        with transaction.atomic():
            updated = Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(
                status=Run.Status.INTERRUPTED, finished_at=timezone.now(),
                error=(f"interrupted: its coordinating process ({run.coordinator_host}, pid "
                       f"{run.coordinator_pid}) is gone; resume with --resume {run.timestamp}"))
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
