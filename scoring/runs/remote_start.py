"""Site-started runs on the ``celery`` executor are coordinated by a task on the workers, not by
the web process that received the form.

Why: a run coordinated inside a web process dies with it (a deploy, a crash, a proxy's
restart), and only that process could stop it. On the workers the web tier holds nothing: any
web process shows the run (rows and the Redis channel layer), cancels it (``remote_cancel``)
and resumes it (another coordination task), and restarting every web process interrupts no run.

The handshake: the web process joins a one-off channel-layer group, sends the task to the
coordinators' queue and waits for the run's row id (or the reason the run could not begin,
which the form shows as before). A task picked up after its deadline does nothing, so a run
the page has already reported as not started never starts later.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from scoring.runs.executors.base import RunError
from scoring.runs.executors.plan import options_payload
from scoring.runs.options import RunOptions
from scoring.runs.options.cli import options_from_mapping
from voice.listen.remote import leave_group, relay_layer

COORDINATE_TASK = "evasite.coordinate_run"
"""The Celery task that coordinates one site-started run (``scoring.coordination_tasks``; sent by name)."""
PICKUP_SECONDS = 30.0
"""How long a coordination task may wait in the queue for a worker before it is void."""
OPEN_SECONDS = 30.0
HAND_OVER_SECONDS = 24 * 3600.0
"""How long a takeover's coordination task stays valid in the queue (nobody waits for it)."""
"""After pickup, how long the worker may take to open the run's row (planning, preflight)."""

log = logging.getLogger(__name__)

Execute = Callable[[RunOptions, "int | None", Callable[[int], None]], Awaitable[None]]


def coordinated_on_workers(options: RunOptions) -> bool:
    """Whether a site-started run with these options is coordinated by a worker task."""
    return (options.executor or settings.EVASITE_EXECUTOR) == "celery"


def _group(ticket: str) -> str:
    return f"run-start.{ticket}"


async def start_on_workers(options: RunOptions, *, owner_id: int | None) -> int:
    """Hand the run to a coordination task; its row id once the worker has opened it.

    Raises RunError with the worker's reason, or when no worker took the task in time."""
    layer = relay_layer()
    if layer is None:
        raise RunError("runs on the celery executor need REDIS_URL (the broker and the channel layer)")
    options.executor = options.executor or settings.EVASITE_EXECUTOR  # the worker's own default may differ
    ticket = secrets.token_hex(12)
    me = await layer.new_channel()
    await layer.group_add(_group(ticket), me)
    try:
        payload = {"options": options_payload(options), "owner_id": owner_id, "ticket": ticket,
                   "not_after": time.time() + PICKUP_SECONDS}
        await sync_to_async(_send)(payload)
        try:
            async with asyncio.timeout(PICKUP_SECONDS + OPEN_SECONDS):
                while True:
                    message = await layer.receive(me)
                    if message.get("type") == "run.opened":
                        return int(message["run_id"])
                    if message.get("type") == "run.refused":
                        raise RunError(str(message.get("error") or "the run could not begin"))
        except TimeoutError:
            raise RunError(f"no Celery worker took the run within {PICKUP_SECONDS:.0f} s: start one on the "
                           f"'{settings.EVASITE_CELERY_COORDINATOR_QUEUE}' queue (README, Scale out)") from None
    finally:
        await leave_group(layer, _group(ticket), me)


def hand_over(options: RunOptions, owner_id: int | None) -> None:
    """Send a run's coordination to the workers with nobody waiting for its row (a takeover,
    ``runs.takeover``). It may wait in the queue for as long as a worker is busy: a copy that
    comes after someone resumed the run by hand is refused by the runner (it is running)."""
    options.executor = options.executor or settings.EVASITE_EXECUTOR
    _send({"options": options_payload(options), "owner_id": owner_id, "ticket": secrets.token_hex(12),
           "not_after": time.time() + HAND_OVER_SECONDS})


def _send(payload: dict[str, Any]) -> None:
    from evasite.celery import app

    app.send_task(COORDINATE_TASK, kwargs={"payload": payload}, queue=settings.EVASITE_CELERY_COORDINATOR_QUEUE)


async def coordinate(payload: dict[str, Any], execute: Execute) -> str:
    """On a worker: run the site's run (``execute``: the launcher's own procedure, gate included)
    and tell the waiting web process its row id, or why it could not begin."""
    if time.time() > float(payload["not_after"]):
        log.warning("a coordination task came after its deadline; the site reported the run as not started")
        return "void"
    layer = relay_layer()
    group = _group(str(payload["ticket"]))
    opened: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def announce() -> None:
        run_id = await opened
        if layer is not None:
            await layer.group_send(group, {"type": "run.opened", "run_id": run_id})

    announcer = asyncio.ensure_future(announce())
    try:
        await execute(options_from_mapping(payload["options"]), payload.get("owner_id"),
                      lambda run_id: opened.done() or opened.set_result(run_id))
    except RunError as exc:
        announcer.cancel()
        if layer is not None:
            await layer.group_send(group, {"type": "run.refused", "error": str(exc)})
        return "refused"
    if not opened.done():
        announcer.cancel()
    with contextlib.suppress(Exception, asyncio.CancelledError):  # lost: the page has timed out
        await announcer
    return "done"
