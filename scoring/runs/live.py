"""Live progress of a run pushed to its Channels group (harness.md §20), so a browser watching
the run page sees scenarios start, turns and results as they happen.

Best effort by design: a slow or full channel layer never slows down or fails a run. With the
in-memory layer only consumers in the same process hear it; with ``REDIS_URL`` a CLI run is
visible from any daphne worker.
"""
from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from channels.layers import get_channel_layer

from scoring.runs.progress import ProgressSink


DELIVERY_TIMEOUT_S = 5.0
"""Longest wait for one event: a hung layer delays the live view, never the run's end."""


def run_group(run_id: int) -> str:
    """The group every watcher of run ``run_id`` joins."""
    return f"run_{run_id}"


class ChannelsProgress:
    """A ProgressSink that broadcasts the §20 events to the run's group, in the order they happen.

    One sender task delivers the events one after another: with one task per event, the Redis
    layer's several round trips per ``group_send`` let a later event overtake an earlier one (a
    watcher saw ``scenario.started`` before ``run.started``)."""

    def __init__(self, run_id: int, layer: Any = None) -> None:
        self.group = run_group(run_id)
        self.layer = layer if layer is not None else get_channel_layer()
        self._queue: deque[dict[str, Any]] = deque()
        self._sender: asyncio.Task | None = None

    def _send(self, event: dict[str, Any]) -> None:
        if self.layer is None:
            return
        self._queue.append(event)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        while self._queue:
            await self._deliver(self._queue.popleft())

    async def _deliver(self, event: dict[str, Any]) -> None:
        try:
            async with asyncio.timeout(DELIVERY_TIMEOUT_S):
                await self.layer.group_send(self.group, {"type": "run.event", "event": event})
        except Exception:  # ChannelFull, Redis down or hung...: the live view is not worth failing a run
            return

    async def flush(self) -> None:
        """Wait until every event sent so far is delivered (or given up on)."""
        while self._sender is not None and not self._sender.done():
            await asyncio.wait({self._sender})

    def run_started(self, *, run_label: str, total: int, already_done: int) -> None:
        self._send({"type": "run.started", "run": run_label, "total": total, "already_done": already_done})

    def scenario_started(self, name: str) -> None:
        self._send({"type": "scenario.started", "name": name})

    def turn(self, name: str, role: str, text: str) -> None:
        self._send({"type": "turn", "name": name, "role": role, "text": text})

    def scenario_finished(self, name: str, metrics: dict[str, Any]) -> None:
        self._send({
            "type": "scenario.finished",
            "name": name,
            "is_successful": metrics.get("is_successful"),
            "stop_reason": metrics.get("stop_reason"),
            "auto_retry_count": metrics.get("auto_retry_count", 0),
        })

    def run_finished(self, *, success_rate: float | None) -> None:
        self._send({"type": "run.finished", "success_rate": success_rate})

    def run_ended(self, *, status: str, error: str) -> None:
        """The run stopped without finishing (cancelled, interrupted, failed)."""
        self._send({"type": "run.ended", "status": status, "error": error})

    def run_gated(self, *, regression: bool | None) -> None:
        """After the run finished, the site stored its verdict against the baseline (None: none
        could be given)."""
        self._send({"type": "run.gated", "regression": regression})


class FanOut:
    """Delivers every progress call to several sinks (terminal and live group, say)."""

    def __init__(self, *sinks: ProgressSink) -> None:
        self.sinks = sinks

    def run_started(self, **kwargs: Any) -> None:
        for sink in self.sinks:
            sink.run_started(**kwargs)

    def scenario_started(self, name: str) -> None:
        for sink in self.sinks:
            sink.scenario_started(name)

    def turn(self, name: str, role: str, text: str) -> None:
        for sink in self.sinks:
            sink.turn(name, role, text)

    def scenario_finished(self, name: str, metrics: dict[str, Any]) -> None:
        for sink in self.sinks:
            sink.scenario_finished(name, metrics)

    def run_finished(self, **kwargs: Any) -> None:
        for sink in self.sinks:
            sink.run_finished(**kwargs)
