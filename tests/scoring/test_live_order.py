"""Live events reach a watcher in the order they happened: one run's sink delivers them one after
another, however long each ``group_send`` takes, and ``run.started`` is on the layer before any
scenario is dispatched (a Celery worker publishes that scenario's events from its own process)."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from scoring.runs import live as live_module
from scoring.runs import runner as runner_module
from scoring.runs.live import ChannelsProgress
from scoring.runs.options import RunOptions
from scoring.runs.runner import run_evaluation


class UnevenLayer:
    """A channel layer whose ``group_send`` takes longer for some events than for others, as the
    Redis layer's first send does while it opens its connection."""

    def __init__(self, delays: dict[str, float], journal: list[str] | None = None) -> None:
        self.delays = delays
        self.journal = journal if journal is not None else []

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        kind = message["event"]["type"]
        await asyncio.sleep(self.delays.get(kind, 0.0))
        self.journal.append(kind)


async def test_events_arrive_in_the_order_they_were_sent_whatever_each_send_takes() -> None:
    layer = UnevenLayer({"run.started": 0.2, "scenario.started": 0.05})
    live = ChannelsProgress(1, layer=layer)
    live.run_started(run_label="eval_x", total=2, already_done=0)
    live.scenario_started("a")
    live.turn("a", "agent", "Hello.")
    live.scenario_started("b")
    live.scenario_finished("a", {"is_successful": True})
    await live.flush()
    assert layer.journal == ["run.started", "scenario.started", "turn", "scenario.started", "scenario.finished"]
    live.run_finished(success_rate=1.0)  # a send after a flush starts a new sender
    await live.flush()
    assert layer.journal[-1] == "run.finished"


async def test_a_hung_layer_delays_the_events_but_never_the_runs_end(monkeypatch) -> None:
    class HungLayer:
        async def group_send(self, group: str, message: dict[str, Any]) -> None:
            await asyncio.sleep(3600)

    monkeypatch.setattr(live_module, "DELIVERY_TIMEOUT_S", 0.05)
    live = ChannelsProgress(1, layer=HungLayer())
    for name in ("a", "b", "c"):
        live.scenario_started(name)
    async with asyncio.timeout(2):  # three sends given up on, one after another
        await live.flush()


@pytest.mark.django_db(transaction=True)
async def test_run_started_is_delivered_before_any_scenario_is_dispatched(tmp_path: Path, monkeypatch) -> None:
    journal: list[str] = []
    layer = UnevenLayer({"run.started": 0.3}, journal)

    class SlowStart(ChannelsProgress):
        def __init__(self, run_id: int) -> None:
            super().__init__(run_id, layer=layer)

    real_get_executor = runner_module.get_executor

    def recording_executor(name: str):
        executor = real_get_executor(name)
        run_items = executor.run_items

        async def dispatch(context, pending):
            journal.append("dispatch")
            return await run_items(context, pending)

        executor.run_items = dispatch
        return executor

    monkeypatch.setattr(runner_module, "ChannelsProgress", SlowStart)
    monkeypatch.setattr(runner_module, "get_executor", recording_executor)
    await run_evaluation(RunOptions(scenarios=["eva_airline__1_1_3"], modality="text", output_dir=str(tmp_path)))
    assert journal[:3] == ["run.started", "dispatch", "scenario.started"], journal
    assert journal[-1] == "run.finished"
