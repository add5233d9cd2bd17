"""Live progress over Channels (harness.md §20): the consumer's snapshot, the group events the
runner's sink sends, and that every run wires that sink in."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from django.contrib.auth import get_user_model
from django.test import Client

from evasite.asgi import application
from scoring.runs import runner as runner_module
from scoring.runs.live import ChannelsProgress
from scoring.models import Run
from scoring.runs.options import RunOptions
from scoring.runs.runner import run_evaluation


SAME_ORIGIN = (b"origin", b"http://testserver")


def _session_cookie() -> tuple[bytes, bytes]:
    """A logged-in user's session cookie, as a browser would send it with the socket."""
    user = get_user_model().objects.create_user("watcher", password="pw-watcher-123")
    client = Client()
    client.force_login(user)
    return b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()


async def _socket(path: str, *headers: tuple[bytes, bytes]) -> tuple[WebsocketCommunicator, bool]:
    communicator = WebsocketCommunicator(application, path, headers=list(headers))
    connected, _ = await communicator.connect(timeout=30)
    return communicator, connected


@pytest.mark.django_db(transaction=True)
async def test_watcher_gets_a_snapshot_then_the_run_events() -> None:
    run = await sync_to_async(Run.objects.create)(timestamp="20260101_000000", session_dir="/tmp/x",
                                                  total_scenarios=2, completed_scenarios=1)
    cookie = await sync_to_async(_session_cookie)()
    communicator, connected = await _socket(f"/ws/runs/{run.pk}/", SAME_ORIGIN, cookie)
    try:
        assert connected
        assert await communicator.receive_json_from(timeout=5) == {
            "type": "snapshot", "run": "eval_20260101_000000", "status": "running", "modality": "",
            "total": 2, "completed": 1, "successful": 0, "finished": [], "running": []}
        live = ChannelsProgress(run.pk)
        live.scenario_started("eva_airline__1_1_3")
        live.turn("eva_airline__1_1_3", "agent", "Hello there.")
        live.scenario_finished("eva_airline__1_1_3", {"is_successful": True, "stop_reason": "[EXIT]",
                                                      "auto_retry_count": 0})
        live.run_finished(success_rate=1.0)
        await live.flush()
        received = [await communicator.receive_json_from(timeout=5) for _ in range(4)]
        assert [e["type"] for e in received] == ["scenario.started", "turn", "scenario.finished", "run.finished"]
        assert received[1] == {"type": "turn", "name": "eva_airline__1_1_3", "role": "agent", "text": "Hello there."}
        assert received[2]["is_successful"] is True and received[2]["stop_reason"] == "[EXIT]"
        assert received[3]["success_rate"] == 1.0
    finally:
        await communicator.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_unknown_run_is_refused() -> None:
    cookie = await sync_to_async(_session_cookie)()
    communicator, connected = await _socket("/ws/runs/999999/", SAME_ORIGIN, cookie)
    assert not connected
    await communicator.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_anonymous_and_foreign_origin_sockets_are_refused() -> None:
    run = await sync_to_async(Run.objects.create)(timestamp="20260101_000001", session_dir="/tmp/y")
    anonymous, connected = await _socket(f"/ws/runs/{run.pk}/", SAME_ORIGIN)
    assert not connected
    await anonymous.disconnect()
    cookie = await sync_to_async(_session_cookie)()
    foreign, connected = await _socket(f"/ws/runs/{run.pk}/", (b"origin", b"http://evil.example"), cookie)
    assert not connected
    await foreign.disconnect()
    no_origin, connected = await _socket(f"/ws/runs/{run.pk}/", cookie)
    assert not connected
    await no_origin.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_every_run_broadcasts_to_its_group(tmp_path: Path, monkeypatch) -> None:
    sent: list[tuple[str, dict[str, Any]]] = []

    class Recording(ChannelsProgress):
        def _send(self, event: dict[str, Any]) -> None:
            sent.append((self.group, event))
            super()._send(event)

    monkeypatch.setattr(runner_module, "ChannelsProgress", Recording)
    report = await run_evaluation(RunOptions(scenarios=["eva_airline__1_1_3"], modality="text",
                                             output_dir=str(tmp_path)))
    assert {group for group, _ in sent} == {f"run_{report.run_id}"}
    types = [event["type"] for _, event in sent]
    assert types[0] == "run.started" and types[1] == "scenario.started" and types[-1] == "run.finished"
    assert types.count("turn") == report.metrics[0]["total_turns"]
