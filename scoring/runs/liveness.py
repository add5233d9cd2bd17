"""Whether a running run still has its coordinator, from any host.

Whoever coordinates a run (``run_eval``, a web process, a Celery coordination task) records its
host and pid when it opens the run and stamps ``coordinator_seen_at`` a few times per lapse
while it runs. On the coordinator's own host its pid is asked directly, which is immediate. From
any other host the stamp is all there is: a run not heard from for a whole lapse has lost its
coordinator. That is how a web process on one machine offers Resume for a run whose Celery
worker died on another, instead of showing it running forever. Hosts are expected to keep time
(NTP): the stamp is the coordinator's clock, read against the reader's.
"""
from __future__ import annotations

import asyncio
import logging
import os
import socket
from datetime import datetime
from enum import Enum
from pathlib import Path

from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone

from scoring import services
from scoring.models import Run

log = logging.getLogger(__name__)

HEARTBEATS_PER_LAPSE = 6
"""Stamps per lapse: a coordinator must miss several in a row before it is taken for gone."""


class Coordinator(Enum):
    ALIVE = "alive"
    GONE = "gone"
    UNKNOWN = "unknown"  # nothing recorded to tell (an old row, or a run opened by hand)


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


def coordinator_state(*, host: str, pid: int | None, seen_at: datetime | None, this_host: str,
                      now: datetime, lapse: float) -> Coordinator:
    """What can be told about a running run's coordinator from ``this_host`` at ``now``."""
    if host and host == this_host and pid is not None:
        alive = pid == os.getpid() or process_alive(pid)
        return Coordinator.ALIVE if alive else Coordinator.GONE
    if seen_at is None:
        return Coordinator.UNKNOWN
    return Coordinator.GONE if silent_seconds(seen_at, now) > lapse else Coordinator.ALIVE


def silent_seconds(seen_at: datetime, now: datetime) -> float:
    """Seconds since the coordinator's last heartbeat."""
    return (now - seen_at).total_seconds()


def coordinator_of(run: Run, this_host: str | None = None) -> Coordinator:
    """What this process can tell about a run's coordinator (read-only)."""
    return coordinator_state(host=run.coordinator_host, pid=run.coordinator_pid, seen_at=run.coordinator_seen_at,
                             this_host=this_host or socket.gethostname(), now=timezone.now(),
                             lapse=settings.EVASITE_COORDINATOR_LAPSE)


def gone_reason(run: Run, this_host: str | None = None) -> str:
    """How an orphaned run lost its coordinator, in the runner's words (``run_state`` rewords it)."""
    who = f"its coordinating process ({run.coordinator_host}, pid {run.coordinator_pid})"
    if run.coordinator_host == (this_host or socket.gethostname()) or run.coordinator_seen_at is None:
        return f"{who} is gone"
    return f"{who} fell silent ({silent_seconds(run.coordinator_seen_at, timezone.now()):.0f} s without a heartbeat)"


def resume_refusal(session_dir: Path) -> str:
    """Why the run stored in ``session_dir`` must not be resumed now ("" when it may): its
    coordinator is still at work, and a second one would run its scenarios twice."""
    run = Run.objects.filter(session_dir=str(session_dir.resolve()), status=Run.Status.RUNNING).first()
    if run is None or coordinator_of(run) is not Coordinator.ALIVE:
        return ""
    heard = ("" if run.coordinator_seen_at is None else
             f", last heard from {silent_seconds(run.coordinator_seen_at, timezone.now()):.0f} s ago")
    return (f"Cannot resume: eval_{run.timestamp} is still running (coordinated by {run.coordinator_host}, "
            f"pid {run.coordinator_pid}{heard}). Cancel it first, or, if that process is gone, resume once it "
            f"has been silent for {settings.EVASITE_COORDINATOR_LAPSE} s.")


async def keep_alive(run_id: int, lapse: float) -> None:
    """Stamp the run's heartbeat until cancelled (a task beside the run). A failed stamp is
    logged and the next one tried: one missed beat is far from a lapse."""
    interval = lapse / HEARTBEATS_PER_LAPSE
    while True:
        await asyncio.sleep(interval)
        try:
            await sync_to_async(services.run_heartbeat)(run_id=run_id)
        except Exception as exc:  # the database briefly away: the run itself will notice
            log.warning("run %s: heartbeat not recorded: %r", run_id, exc)
