"""Runs started from the browser: ``run_evaluation`` as an asyncio task of the server process,
off the request path, with the strong references asyncio needs and a handle to cancel it; or,
on the ``celery`` executor, as a coordination task on the workers (``runs.remote_start``), so
no web process holds the run.

Cancelling the task is the same as Ctrl-C on ``run_eval``: in-flight scenarios are ended, the run
is recorded ``interrupted`` and ``--resume`` (the Resume button) picks it up; finished scenarios
are already on disk and in the database. A run with a baseline is gated when it finishes, as
``run_eval --baseline`` does (``scoring.web.site_gate``).
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from typing import Any

from asgiref.sync import sync_to_async

from scoring.runs.options import RunOptions, options_argv
from scoring.runs import remote_cancel, remote_start
from scoring.runs.executors.base import RunCancelled
from scoring.runs.runner import RunError, run_evaluation
from scoring.web.selectors import run_is_running
from scoring.web.site_gate import gate_finished_run, open_site_baseline

log = logging.getLogger(__name__)

# run id -> its task; tasks still opening their row are held in _STARTING. Both are the strong
# references that keep asyncio from collecting a running task.
_RUNNING: dict[int, asyncio.Task[Any]] = {}
_STARTING: set[asyncio.Task[Any]] = set()
CANCEL_WAIT_SECONDS = 30.0


def running_here(run_id: int) -> bool:
    """Whether this process is coordinating run ``run_id``."""
    task = _RUNNING.get(run_id)
    return task is not None and not task.done()


async def execute(options: RunOptions, owner_id: int | None, on_open: Any) -> None:
    """A site run from start to gate, wherever it is coordinated (here, or on a worker)."""
    try:
        baseline = await sync_to_async(open_site_baseline)(options)  # before any call, like the CLI
        report = await run_evaluation(options, argv=options_argv(options), source="web", owner_id=owner_id,
                                      on_open=on_open)
        await gate_finished_run(report, options, baseline)
    except (asyncio.CancelledError, RunCancelled):
        pass  # the runner has recorded the run as interrupted
    except RunError:
        raise  # reported to the request that is still waiting for the row
    except Exception:
        log.exception("run started from the site failed")  # the runner recorded it as failed


async def start(options: RunOptions, *, owner_id: int | None) -> int:
    """Start a run (in this process, or on the workers for the celery executor) and return its
    row id once the row exists.

    Raises RunError when the run cannot begin (unknown scenario, missing session to resume).
    """
    if remote_start.coordinated_on_workers(options):
        return await remote_start.start_on_workers(options, owner_id=owner_id)
    loop = asyncio.get_running_loop()
    opened: asyncio.Future[int] = loop.create_future()

    def on_open(run_id: int) -> None:
        _RUNNING[run_id] = task
        if not opened.done():
            opened.set_result(run_id)

    # A fresh context: the run must not inherit the request's (asgiref ends that request's
    # thread-sensitive executor when the response is sent, and the run outlives it).
    task = loop.create_task(execute(options, owner_id, on_open), context=contextvars.Context())
    _STARTING.add(task)
    task.add_done_callback(_STARTING.discard)
    await asyncio.wait({opened, task}, return_when=asyncio.FIRST_COMPLETED)
    if opened.done():
        run_id = opened.result()
        task.add_done_callback(lambda _: _RUNNING.pop(run_id, None))
        return run_id
    task.result()  # re-raises the RunError
    raise RunError("the run ended before it was recorded")


async def cancel(run_id: int, *, by: str) -> bool:
    """Cancel a run and wait until it has recorded its end: one this process coordinates, or,
    over a shared Redis channel layer, one that another process coordinates (another web
    process, a shell ``run_eval``). False when no coordinator could be reached: the run is over,
    or it runs where this process cannot reach (the in-memory layer)."""
    task = _RUNNING.get(run_id)
    if task is not None and not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=CANCEL_WAIT_SECONDS)
        return True
    if not await remote_cancel.request(run_id, by=by):
        return False
    deadline = time.monotonic() + CANCEL_WAIT_SECONDS
    while time.monotonic() < deadline and await sync_to_async(run_is_running)(run_id):
        await asyncio.sleep(0.25)
    return True

