"""Cancel a run from any process: its coordinator listens on a channel-layer group of its own.

Why: a run is coordinated by one process (a shell ``run_eval``, or the web process whose form
started it), while the Cancel button may be pressed on any web process behind a proxy. When the
processes share the Redis channel layer, the one that receives the click asks the group, the
coordinator cancels its run exactly as Ctrl-C would (the run ends ``interrupted`` and resumable)
and answers, so the page can say so. With the in-memory layer (one process) nothing here runs:
that process can only cancel what it holds itself (``scoring.web.launcher``).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from scoring.runs.interrupt import RECANCEL_SECS
from voice.listen.remote import leave_group, relay_layer

ANSWER_WAIT_S = 6.0
"""How long a Cancel waits for a coordinator to answer before saying none listens."""
RESEND_S = 1.0
"""A request is sent again this often while unanswered (a receive cut short may lose a message)."""

log = logging.getLogger(__name__)


def group_name(run_id: int) -> str:
    return f"run-control.{int(run_id)}"


async def listen(run_id: int, task: asyncio.Task[Any], on_cancel: Callable[[str], None], *,
                 layer: Any = None) -> asyncio.Task[None] | None:
    """In the coordinator: join ``run_id``'s group now, then, until the returned task is
    cancelled, a cancel request calls ``on_cancel(who)`` and cancels ``task`` (again every half
    second until it ends: a cancellation swallowed on the way must not let the run go on).
    None: no cross-process layer, or it cannot be reached (the run goes on without remote Cancel)."""
    layer = layer if layer is not None else relay_layer()
    if layer is None:
        return None
    group = group_name(run_id)
    try:
        me = await layer.new_channel()
        await layer.group_add(group, me)
    except Exception as exc:
        log.warning("run %s cannot be cancelled from other processes: %r", run_id, exc)
        return None
    return asyncio.ensure_future(_serve(layer, group, me, task, on_cancel))


async def _serve(layer: Any, group: str, me: str, task: asyncio.Task[Any], on_cancel: Callable[[str], None]) -> None:
    asked = False
    try:
        while True:
            message = await layer.receive(me)
            if message.get("type") != "run.cancel":
                continue
            if not asked:
                asked = True
                on_cancel(str(message.get("by") or "someone")[:150])
            reply = message.get("reply")
            if isinstance(reply, str):
                await layer.send(reply, {"type": "run.cancelling"})
            while not task.done():
                task.cancel()
                await asyncio.wait({task}, timeout=RECANCEL_SECS)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # Redis went away: the run goes on, only remote Cancel is lost
        log.warning("remote cancel listener for %s stopped: %r", group, exc)
    finally:
        await asyncio.shield(leave_group(layer, group, me))


async def request(run_id: int, *, by: str, layer: Any = None, timeout: float = ANSWER_WAIT_S) -> bool:
    """Ask ``run_id``'s coordinator, wherever it runs, to cancel the run. True once it answered
    that it is cancelling; False when no coordinator answered within ``timeout`` (none shares
    this layer, or the run is over) or there is no cross-process layer."""
    layer = layer if layer is not None else relay_layer()
    if layer is None:
        return False
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    reply = await layer.new_channel()
    message = {"type": "run.cancel", "by": by, "reply": reply}
    while True:
        await layer.group_send(group_name(run_id), message)
        try:
            async with asyncio.timeout(max(0.05, min(RESEND_S, deadline - loop.time()))):
                answer = await layer.receive(reply)
            return answer.get("type") == "run.cancelling"
        except TimeoutError:
            if loop.time() >= deadline:
                return False
