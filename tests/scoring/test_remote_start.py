"""The handshake of a site-started run coordinated on a worker (``scoring.runs.remote_start``),
with the worker's side run in this process on an in-memory channel layer: the row id comes
back, a refusal comes back as the form's error, a task nobody takes times out, and a task taken
after its deadline does nothing. (Real workers and servers: test_celery_site.py.)"""
from __future__ import annotations

import asyncio
import time

import pytest
from channels.layers import InMemoryChannelLayer

from scoring.runs import remote_start
from scoring.runs.executors.base import RunError
from scoring.runs.options import RunOptions


@pytest.fixture
def layer(monkeypatch: pytest.MonkeyPatch) -> InMemoryChannelLayer:
    shared = InMemoryChannelLayer()
    monkeypatch.setattr(remote_start, "relay_layer", lambda: shared)
    return shared


def _worker(monkeypatch: pytest.MonkeyPatch, execute) -> list[dict]:
    """Sending the task runs its worker side at once, on this loop."""
    sent: list[dict] = []

    def send(payload: dict) -> None:  # called off the loop, as the broker client is
        sent.append(payload)
        asyncio.run_coroutine_threadsafe(remote_start.coordinate(payload, execute), loop)

    loop = asyncio.get_running_loop()
    monkeypatch.setattr(remote_start, "_send", send)
    return sent


async def test_the_web_process_gets_the_row_id_that_the_worker_opened(layer, monkeypatch) -> None:
    finished = asyncio.Event()

    async def execute(options: RunOptions, owner_id, on_open) -> None:
        assert options.scenarios == ["eva_airline__1_1_3"] and owner_id == 7
        on_open(41)
        await finished.wait()  # the run goes on after the page has its id

    sent = _worker(monkeypatch, execute)
    options = RunOptions(scenarios=["eva_airline__1_1_3"], modality="text", executor="celery", judge_api_key="sk-x")
    assert await remote_start.start_on_workers(options, owner_id=7) == 41
    assert sent[0]["options"]["judge_api_key"] is None  # an inline key never travels through the broker
    finished.set()
    await asyncio.sleep(0.05)  # the worker's side ends before the loop does


async def test_a_run_that_cannot_begin_is_the_forms_error(layer, monkeypatch) -> None:
    async def execute(options, owner_id, on_open) -> None:
        raise RunError("unknown scenario: nope")

    _worker(monkeypatch, execute)
    with pytest.raises(RunError, match="unknown scenario: nope"):
        await remote_start.start_on_workers(RunOptions(executor="celery"), owner_id=None)


async def test_a_task_no_worker_takes_is_reported_and_void_when_taken_late(layer, monkeypatch) -> None:
    sent: list[dict] = []
    monkeypatch.setattr(remote_start, "_send", sent.append)
    monkeypatch.setattr(remote_start, "PICKUP_SECONDS", 0.2)
    monkeypatch.setattr(remote_start, "OPEN_SECONDS", 0.2)
    with pytest.raises(RunError, match="no Celery worker took the run"):
        await remote_start.start_on_workers(RunOptions(executor="celery"), owner_id=None)
    assert sent[0]["not_after"] < time.time()

    async def execute(options, owner_id, on_open) -> None:
        raise AssertionError("a void task must not run")

    assert await remote_start.coordinate(sent[0], execute) == "void"


async def test_without_a_cross_process_layer_the_run_is_refused(monkeypatch) -> None:
    monkeypatch.setattr(remote_start, "relay_layer", lambda: None)
    with pytest.raises(RunError, match="REDIS_URL"):
        await remote_start.start_on_workers(RunOptions(executor="celery"), owner_id=None)
