"""The call consumer in process (WebsocketCommunicator): a typed call runs through the runner to a
stored, scored human run; bad control messages are answered, never fatal; ownership holds."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from evasite.routing import websocket_urlpatterns

SEED = "eva_airline__voluntary_date_change"
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def call_settings(settings, tmp_path):
    settings.EVASITE_OUTPUT_DIR = str(tmp_path / "eval_results")
    settings.EVASITE_CALL_INACTIVITY_TIMEOUT = 4.0
    return settings


async def _user(name: str, *, staff: bool = False):
    from django.contrib.auth import get_user_model

    return await sync_to_async(get_user_model().objects.create_user)(name, password="pw", is_staff=staff)


async def _connect(path: str, user) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    communicator.scope["user"] = user
    connected, _ = await communicator.connect(timeout=5)
    assert connected
    return communicator


async def _events_until(communicator: WebsocketCommunicator, kinds: set[str], timeout: float = 60) -> list[dict]:
    events = []
    async with asyncio.timeout(timeout):
        while True:
            event = json.loads(await communicator.receive_from(timeout=timeout))
            events.append(event)
            if event["type"] in kinds:
                return events


async def test_typed_call_is_stored_as_a_human_run_with_the_gold_hash(call_settings):
    from scoring.models import Run, ScenarioResult

    tester = await _user("alice")
    ws = await _connect(f"/ws/call/{SEED}/", tester)
    try:
        await ws.send_to(text_data=json.dumps({"type": "start", "modality": "text", "agent": {"model": "gold-replay"}}))
        events = await _events_until(ws, {"call"})
        call_id = events[-1]["id"]
        events = await _events_until(ws, {"turn"})  # the agent greets first
        assert events[-1]["speaker"] == "Agent"
        assert {"type": "state", "state": "live"} in events and any(e["type"] == "tick" for e in events)
        lines = ["Hi, I need to change my flight to March twenty-fifth.",
                 "My confirmation number is Z K 3 F F W and my last name is Rodriguez.",
                 "Yes, please go ahead with that.", "No, that is all. Thank you, goodbye."]
        for line in lines:
            await ws.send_to(text_data=json.dumps({"type": "say", "text": line}))
            events = await _events_until(ws, {"turn", "ended"})
            while events[-1]["type"] == "turn" and events[-1]["role"] == "user":
                events = await _events_until(ws, {"turn", "ended"})
            if events[-1]["type"] == "ended":
                break
        if events[-1]["type"] != "ended":
            events = await _events_until(ws, {"ended"})
        ended = events[-1]
    finally:
        await ws.disconnect()
    assert ended["stop_reason"] == "[EXIT]"
    assert ended["result_url"] == f"/results/{ended['result_id']}/"
    run = await sync_to_async(Run.objects.get)(pk=ended["run_id"])
    assert (run.source, run.owner_id, run.modality) == ("human", tester.pk, "text")
    result = await sync_to_async(ScenarioResult.objects.get)(pk=ended["result_id"])
    assert result.db_state_match is True and result.is_successful is True
    assert result.metrics["stop_reason"] == "[EXIT]"
    assert call_id
    # A one-scenario session directory in the usual layout, without the user bot's logs.
    session = Path(run.session_dir)
    assert session.parent == Path(call_settings.EVASITE_OUTPUT_DIR).resolve()
    for name in ("run_args.json", "evaluation_log.txt", "all_metrics.json", "all_summary.txt", "all_latencies.csv"):
        assert (session / name).is_file(), name
    scenario_dir = session / SEED
    for name in ("metrics.json", "conversation_log.txt", "final_scenario_db.json", "bot_logs_agent/llm_context.json"):
        assert (scenario_dir / name).is_file(), name
    assert not (scenario_dir / "bot_logs_user").exists()
    log = (scenario_dir / "conversation_log.txt").read_text()
    assert "Z K 3 F F W" in log  # the tester's own words are the user turns


async def test_malformed_control_messages_are_answered_and_the_socket_stays(call_settings):
    tester = await _user("bob")
    ws = await _connect(f"/ws/call/{SEED}/", tester)
    try:
        for bad in ("not json", "[1, 2]", json.dumps({"type": ["start"]}), json.dumps({"type": "dance"}),
                    json.dumps({"type": "say", "text": 5}), json.dumps({"type": "hangup"}),
                    json.dumps({"type": "start", "modality": "smoke"}),
                    json.dumps({"type": "start", "agent": {"model": "no-such-model"}}),
                    json.dumps({"type": "start", "agent": {"url": "http://example.invalid/"}}),
                    json.dumps({"type": "start", "agent": {"api_key_name": "sk-THE-KEY value"}}),
                    json.dumps({"type": "start", "agent": {"model": "m", "llm_url": "https://llm.example.com/v1",
                                                           "api_key_name": "EVASITE_TEST_UNSET_KEY"}}),
                    "x" * 9000):
            await ws.send_to(text_data=bad)
            event = json.loads(await ws.receive_from(timeout=5))
            assert event["type"] == "error", (bad, event)
        await ws.send_to(bytes_data=b"\x00\x01")
        assert json.loads(await ws.receive_from(timeout=5))["type"] == "error"
    finally:
        await ws.disconnect()


async def test_only_the_owner_or_staff_can_follow_a_call_and_closing_the_page_ends_it(call_settings):
    from scoring.models import ScenarioResult

    owner, other, staff = await _user("carol"), await _user("dave"), await _user("erin", staff=True)
    ws = await _connect(f"/ws/call/{SEED}/", owner)
    await ws.send_to(text_data=json.dumps({"type": "start", "modality": "text", "agent": {"model": "gold-replay"}}))
    call_id = (await _events_until(ws, {"call"}))[-1]["id"]
    await _events_until(ws, {"turn"})

    intruder = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/calls/{call_id}/")
    intruder.scope["user"] = other
    connected, code = await intruder.connect(timeout=5)
    assert not connected and code == 4403
    watcher = await _connect(f"/ws/calls/{call_id}/", staff)
    try:
        replay = await _events_until(watcher, {"turn"})  # a late watcher gets the call so far
        assert replay[-1]["speaker"] == "Agent"
        await ws.disconnect()  # the tab closes mid-call
        ended = (await _events_until(watcher, {"ended"}))[-1]
    finally:
        await watcher.disconnect()
    assert ended["stop_reason"] == "[SIMULATOR_EXIT]"
    result = await sync_to_async(ScenarioResult.objects.get)(pk=ended["result_id"])
    assert result.metrics["simulator_end_reported"] is True
    assert result.is_successful is False  # left before anything was done


async def test_a_silent_tester_ends_in_the_inactivity_timeout(call_settings):
    tester = await _user("frank")
    ws = await _connect(f"/ws/call/{SEED}/", tester)
    try:
        await ws.send_to(text_data=json.dumps({"type": "start", "modality": "text", "agent": {"model": "gold-replay"}}))
        ended = (await _events_until(ws, {"ended"}, timeout=60))[-1]
    finally:
        await ws.disconnect()
    assert ended["stop_reason"] == "[INACTIVITY_TIMEOUT]"


async def test_hang_up_is_the_passengers_exit_and_happens_once(call_settings):
    from scoring.models import ScenarioResult

    tester = await _user("gina")
    ws = await _connect(f"/ws/call/{SEED}/", tester)
    try:
        await ws.send_to(text_data=json.dumps({"type": "start", "modality": "text"}))
        await _events_until(ws, {"turn"})
        await ws.send_to(text_data=json.dumps({"type": "start", "modality": "text"}))
        assert "already has a call" in (await _events_until(ws, {"error"}))[-1]["message"]
        await ws.send_to(text_data=json.dumps({"type": "hangup"}))
        ended = (await _events_until(ws, {"ended"}))[-1]
        await ws.send_to(text_data=json.dumps({"type": "hangup"}))
        assert "already ended" in (await _events_until(ws, {"error"}))[-1]["message"]
    finally:
        await ws.disconnect()
    assert ended["stop_reason"] == "[SIMULATOR_EXIT]"
    result = await sync_to_async(ScenarioResult.objects.get)(pk=ended["result_id"])
    assert result.clean_exit is False  # tool-only policy: only the agent's end tool is a clean exit
    assert result.metrics["conversation_end_policy"] == "tool-only"
    log = (Path(result.directory) / "bridge_log.txt").read_text()
    assert "The caller hung up." in log
