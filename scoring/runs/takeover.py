"""Site runs on the Celery executor outlive the worker that coordinates them.

A run started from the site is coordinated by one task on one worker (``remote_start``). When
that worker dies (``kill -9``, the OOM killer, a machine lost), every worker serving the
coordinators' queue watches for it (``coordination_tasks``): the run's coordinator is gone
(``liveness``: its pid on its own host, its heartbeat from any other), so one of them claims the
run, a compare-and-set on the row that exactly one watcher wins, and sends its resume to the
coordinators' queue, as pressing Resume would. Scored scenarios stay; those still in flight on
live workers are left to them (their leases).

Only site runs: a run started from a shell belongs to the person at that shell, who resumes it
(a worker resuming it beside them would race their own ``--resume``). A run taken over
``TAKEOVER_LIMIT`` times stops for a person to look at: a run that kills every coordinator it
gets (a crash it triggers) must not take the workers down one after another.
"""
from __future__ import annotations

import logging
import socket
from collections.abc import Callable

from django.db.models import F
from django.utils import timezone

from scoring.models import Run
from scoring.runs.liveness import Coordinator, coordinator_of, gone_reason
from scoring.runs.options.resume_defaults import resume_options
from scoring.runs.options.schema import RunOptions

log = logging.getLogger(__name__)

TAKEOVER_LIMIT = 3


def claim(run: Run, this_host: str) -> bool:
    """Mark ``run`` interrupted for a takeover if it is still as it was read (nobody resumed it,
    its coordinator did not beat again): True for the one watcher that wins."""
    return bool(Run.objects.filter(
        pk=run.pk, status=Run.Status.RUNNING, takeovers=run.takeovers, coordinator_host=run.coordinator_host,
        coordinator_pid=run.coordinator_pid, coordinator_seen_at=run.coordinator_seen_at,
    ).update(status=Run.Status.INTERRUPTED, finished_at=timezone.now(), takeovers=F("takeovers") + 1,
             error=(f"interrupted: {gone_reason(run, this_host)}; taken over by a worker on {this_host}; "
                    f"resume with --resume {run.timestamp}")))


def take_over_orphans(resume: Callable[[RunOptions, int | None], None]) -> list[int]:
    """Claim every site run on the Celery executor whose coordinator is gone and ``resume`` it
    (send its resume to the coordinators' queue); returns the ids taken over."""
    this_host = socket.gethostname()
    taken = []
    running = Run.objects.filter(status=Run.Status.RUNNING, source=Run.Source.WEB, executor="celery",
                                 takeovers__lt=TAKEOVER_LIMIT)
    for run in running:
        if coordinator_of(run, this_host) is not Coordinator.GONE or not claim(run, this_host):
            continue
        log.warning("run %s (eval_%s): its coordinator (%s, pid %s) is gone; resuming it on the workers",
                    run.pk, run.timestamp, run.coordinator_host, run.coordinator_pid)
        try:
            resume(resume_options(run.parsed_args or {}, timestamp=run.timestamp, session_dir=run.session_dir),
                   run.owner_id)
        except Exception:  # the broker away: the run stays interrupted, with Resume on its page
            log.exception("run %s could not be handed to the coordinators' queue", run.pk)
            continue
        taken.append(run.pk)
    return taken
