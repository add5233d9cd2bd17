"""Listening in on a real bridge session (protocol doubles in voice, over loopback WebRTC with
aiortc as the browser), and the Listen endpoint's refusals."""
from __future__ import annotations

import asyncio
import json

import pytest
from aiortc import RTCPeerConnection, RTCSessionDescription
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.test import AsyncClient

from scoring.core.canonical import db_hash
from scoring.models import Run
from tests.voice.listen_helpers import Listener, band_power, browser_offer
from tests.voice.test_bridge_session import INPUTS, _config
from voice.bridge.engine import EXIT, run_session
from voice.bridge.outcome import SessionOutcome
from voice.listen import registry, service
from voice.listen.tap import LiveTap, open_tap
from voice.testing.double import DoubleOptions, ScriptedTurn, double_host
from voice.testing.transports import hosted

AGENT = (ScriptedTurn("Hello, how can I help?"), ScriptedTurn("Done."), ScriptedTurn("Goodbye.", end=True))
USER = (ScriptedTurn("Please move my flight."), ScriptedTurn("Thanks."))


@pytest.mark.slow(seconds=5)
async def test_two_listeners_hear_both_sides_and_the_call_ends_cleanly():
    key = (41, "1.2.3")
    # The scripted call ends itself in a few seconds; the limits only stop one that hangs (a
    # loaded machine once held it silent for 3 s: [INACTIVITY_TIMEOUT] instead of the end tool).
    config = _config("voice", inactivity_timeout=20.0, duration_seconds=60.0)
    # Each double takes a second of silence for the end of the other's turn. With the default
    # 0.3 s, a stalled loop in the middle of the agent's greeting once made the passenger answer
    # twice, back to back; the agent heard one turn, answered once and waited for the passenger,
    # whose script was spent: [INACTIVITY_TIMEOUT].
    doubles = dict(modality="voice", chunks_per_turn=6, end_of_speech_silence=1.0)
    agent = double_host(DoubleOptions(role="agent", script=AGENT, tone_hz=440.0, **doubles), db_hasher=db_hash)
    user = double_host(DoubleOptions(role="user", script=USER, tone_hz=1000.0, **doubles), db_hasher=db_hash)
    listeners = [Listener(), Listener()]
    already_open = service.open_count()
    async def listened_call(agent_ep, user_ep) -> SessionOutcome:
        with open_tap(key, "voice") as tap:  # as the attempt opens it
            return await run_session(scenario_inputs=INPUTS, agent=agent_ep, user=user_ep, config=config, tap=tap)

    async with hosted(agent, "inproc", label="agent") as agent_ep, hosted(user, "inproc", label="user") as user_ep:
        session = asyncio.create_task(listened_call(agent_ep, user_ep))
        while registry.find(key) is None:
            assert not session.done(), "the session ended before it was registered"
            await asyncio.sleep(0.01)
        for listener in listeners:
            await listener.join(key)
        assert registry.find(key).listener_count == 2
        outcome = await asyncio.wait_for(session, 90)
    for listener in listeners:
        await asyncio.wait_for(listener.ended.wait(), 5)
        await listener.pc.close()
    assert outcome.stop_reason == EXIT and outcome.recording is not None
    assert registry.find(key) is None
    for _ in range(50):
        if service.open_count() == already_open:
            break
        await asyncio.sleep(0.05)
    assert service.open_count() == already_open, "the server closed its listening connections"
    for listener in listeners:
        audio = listener.audio()
        assert listener.rate == 48_000 and audio.size > 48_000, "at least a second of the call"
        assert band_power(audio, 48_000, 440) > 0.05, "the agent is heard"
        assert band_power(audio, 48_000, 1000) > 0.05, "the passenger is heard"


# --- the endpoint ---------------------------------------------------------------------------------

pytestmark_db = pytest.mark.django_db(transaction=True)


def _url(run_id: int, scenario: str = "1.1.1") -> str:
    return f"/voice/listen/{run_id}/{scenario}/offer/"


@sync_to_async
def _users_and_run(tmp_path):
    users = get_user_model().objects
    owner = users.create_user("owner", password="pw-owner-123")
    other = users.create_user("other", password="pw-other-123")
    staff = users.create_user("staff", password="pw-staff-123", is_staff=True)
    run = Run.objects.create(timestamp="20260101_000000", session_dir=str(tmp_path / "eval"), owner=owner,
                             source=Run.Source.WEB, modality="voice")
    return owner, other, staff, run


async def _post(client: AsyncClient, url: str, body: object) -> tuple[int, dict]:
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    response = await client.post(url, data=data, content_type="application/json")
    return response.status_code, json.loads(response.content)


def coordinated_here(run_id: int) -> bool:
    return True


@pytestmark_db
async def test_listen_endpoint_refuses_misuse(tmp_path, settings):
    owner, other, staff, run = await _users_and_run(tmp_path)
    client = AsyncClient()
    status, body = await _post(client, _url(run.pk), {"sdp": "v=0", "type": "offer"})
    assert status == 401 and "Log in" in body["error"]

    await client.aforce_login(other)
    assert (await _post(client, _url(run.pk), {}))[0] == 403, "someone else's run"
    assert (await _post(client, _url(run.pk + 100), {}))[0] == 404, "no such run"
    assert (await client.get(_url(run.pk))).status_code == 405

    await client.aforce_login(owner)
    pc, offer = await browser_offer()
    await pc.close()
    status, body = await _post(client, _url(run.pk), offer)
    assert status == 404 and body["not_live"] and not body["retry"], "a run in no process of this site"
    assert "cannot be heard here" in body["error"]
    settings.EVASITE_LISTEN_RUNS_HERE = f"{__name__}.coordinated_here"
    status, body = await _post(client, _url(run.pk), offer)
    assert status == 404 and body["retry"] and "not live" in body["error"], "its call may still start"
    assert (await _post(client, _url(run.pk), {}))[0] == 400, "the offer is checked first"
    assert (await _post(client, _url(run.pk), "{not json"))[0] == 400
    assert (await _post(client, _url(run.pk), "x" * 70_000))[0] == 413

    key = (run.pk, "1.1.1")
    tap = LiveTap(key)
    registry.register(key, tap)
    try:
        status, body = await _post(client, _url(run.pk), {"sdp": "v=0\r\nm=audio nonsense\r\n", "type": "offer"})
        assert status == 400 and "sdp" in body["error"]
        assert (await _post(client, _url(run.pk), {"sdp": "v=0", "type": "answer"}))[0] == 400
        assert tap.listener_count == 0, "a refused offer leaves no listener behind"
        tap.close()
        status, body = await _post(client, _url(run.pk), offer)
        assert status == 409, "the call has ended"
    finally:
        registry.unregister(key, tap)


@pytestmark_db
async def test_csrf_is_enforced(tmp_path):
    owner, _, _, run = await _users_and_run(tmp_path)
    client = AsyncClient(enforce_csrf_checks=True)
    await client.aforce_login(owner)
    response = await client.post(_url(run.pk), data="{}", content_type="application/json")
    assert response.status_code == 403 and b"CSRF" in response.content


@pytestmark_db
async def test_owner_and_staff_get_an_answer_for_a_live_call(tmp_path):
    owner, _, staff, run = await _users_and_run(tmp_path)
    key = (run.pk, "2.1.1__trial2")
    tap = LiveTap(key)
    registry.register(key, tap)
    peers: list[RTCPeerConnection] = []
    try:
        for user in (owner, staff):
            client = AsyncClient()
            await client.aforce_login(user)
            pc, offer = await browser_offer()
            peers.append(pc)
            status, body = await _post(client, _url(run.pk, "2.1.1__trial2"), offer)
            assert status == 200 and body["type"] == "answer" and "m=audio" in body["sdp"]
            await pc.setRemoteDescription(RTCSessionDescription(**body))
        assert tap.listener_count == 2
    finally:
        tap.close()
        registry.unregister(key, tap)
        for pc in peers:
            await pc.close()
    for _ in range(40):  # the server notices the call ended and lets go of both connections
        if service.open_count() == 0:
            break
        await asyncio.sleep(0.05)
    assert service.open_count() == 0


async def test_a_browser_that_leaves_is_let_go_while_the_call_goes_on():
    key = (42, "1.1.1")
    tap = LiveTap(key)
    registry.register(key, tap)
    already_open = service.open_count()
    try:
        listener = Listener()
        pc = await listener.join(key)
        for _ in range(100):
            if listener.samples:
                break
            await asyncio.sleep(0.05)
        assert listener.samples, "silence flows while nobody speaks"
        assert tap.listener_count == 1 and service.open_count() == already_open + 1
        await pc.close()  # the tab closes
        for _ in range(100):
            if tap.listener_count == 0 and service.open_count() == already_open:
                break
            await asyncio.sleep(0.05)
        assert tap.listener_count == 0 and service.open_count() == already_open
        assert not tap.closed, "the call itself is untouched"
    finally:
        tap.close()
        registry.unregister(key, tap)
