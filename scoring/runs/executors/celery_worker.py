"""The worker's side of the ``celery`` executor: one task message is one delivery of one queued
scenario (``executors.delivery``), planned here from the options the message carries. Progress
goes to the run's live group (the site's run page, Listen) and to the run's feed, which tells the
coordinator what happened; the row is written here."""
from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from scoring.runs.executors.base import QueueItem, RunError
from scoring.runs.executors.delivery import FAILED, deliver
from scoring.runs.executors.feed import FeedWriter
from scoring.runs.executors.lease import RunLeases, redis_client
from scoring.runs.executors.plan import plan_from_payload
from scoring.runs.live import ChannelsProgress, FanOut


async def attempt_on_worker(payload: dict[str, Any]) -> str:
    """Deliver the scenario of one task message; returns the delivery's status. A failed attempt
    is reported on the feed (the coordinator fails the run) and raised (the task fails)."""
    run_id, name = int(payload["run_id"]), QueueItem(**payload["item"]).dir_name
    feed = FeedWriter(run_id)
    live = ChannelsProgress(run_id)
    events = FanOut(live, feed)
    try:
        plan = plan_from_payload(payload, events)
        session = Path(payload["session_dir"])
        if not session.is_dir():
            raise RunError(f"{session} is not visible on worker {socket.gethostname()}: the output directory "
                           "must be shared by the coordinator and every worker")
        delivery = await deliver(plan, events, feed.log, lease=RunLeases(redis_client(), run_id).lease(name))
        feed.outcome(name, delivery.status)
        return delivery.status
    except Exception as exc:
        feed.outcome(name, FAILED, error=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        await live.flush()
        await feed.flush()
