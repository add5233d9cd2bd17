"""Listening in on a human tester's live voice call through the run page's Listen endpoint, in
process: the call is a real one (aiortc as the tester's browser, the built-in agent, the runner),
and the listener is an aiortc peer answered by ``POST /voice/listen/<run>/<scenario>/offer/``."""
from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import AudioStreamTrack, MediaStreamError
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from tests.voice.human.helpers import SEED
from tests.voice.listen_helpers import browser_offer
from voice.human.calls import create_call, hosts_run
from voice.listen import registry
from voice.webrtc.config import allow_loopback_candidates

pytestmark = [pytest.mark.slow(seconds=10), pytest.mark.django_db(transaction=True)]


@pytest.fixture
def call_settings(settings, tmp_path):
    settings.EVASITE_OUTPUT_DIR = str(tmp_path / "eval_results")
    settings.EVASITE_TTS = "espeak"  # fast speech: the greeting is what the listener must hear
    settings.EVASITE_STT = "pocketsphinx"
    settings.EVASITE_CALL_INACTIVITY_TIMEOUT = 60.0
    return settings


@sync_to_async
def _users():
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    return (users.create_user("tess", password="pw-tess-123"), users.create_user("olga", password="pw-olga-123"),
            users.create_user("sam", password="pw-sam-123", is_staff=True))


async def _tester_browser(call, heard: list[np.ndarray]) -> RTCPeerConnection:
    """The tester's browser: a silent microphone, connected through the call's offer logic; what
    it hears of the agent goes to ``heard``."""
    allow_loopback_candidates()
    pc = RTCPeerConnection()
    pc.addTrack(AudioStreamTrack())

    @pc.on("track")
    def on_track(track) -> None:
        asyncio.ensure_future(_drain(track, heard))

    await pc.setLocalDescription(await pc.createOffer())
    answer = await call.offer({"sdp": pc.localDescription.sdp, "type": "offer"})
    await pc.setRemoteDescription(RTCSessionDescription(**answer))
    return pc


async def _drain(track, heard: list[np.ndarray], ended: asyncio.Event | None = None) -> None:
    try:
        while True:
            frame = await track.recv()
            heard.append(frame.to_ndarray().reshape(-1, len(frame.layout.channels))[:, 0])
    except MediaStreamError:
        if ended is not None:
            ended.set()


def _loud(heard: list[np.ndarray]) -> bool:
    audio = np.concatenate(heard) if heard else np.zeros(0, dtype=np.int16)
    return audio.size > 48_000 and int(np.abs(audio.astype(np.int32)).max()) > 1000


async def _listen(user, run_id: int) -> tuple[int, dict, RTCPeerConnection, list[np.ndarray], asyncio.Event]:
    client = AsyncClient()
    await client.aforce_login(user)
    pc, offer = await browser_offer()
    heard: list[np.ndarray] = []
    ended = asyncio.Event()

    @pc.on("track")
    def on_track(track) -> None:
        asyncio.ensure_future(_drain(track, heard, ended))

    response = await client.post(f"/voice/listen/{run_id}/{SEED}/offer/", data=json.dumps(offer),
                                 content_type="application/json")
    body = json.loads(response.content)
    if response.status_code == 200:
        await pc.setRemoteDescription(RTCSessionDescription(**body))
    return response.status_code, body, pc, heard, ended


async def _event(queue: asyncio.Queue, kind: str, timeout: float = 60) -> dict:
    async with asyncio.timeout(timeout):
        while (event := await queue.get())["type"] != kind:
            pass
    return event


async def test_the_owner_and_staff_can_listen_to_a_live_human_voice_call(call_settings):
    owner, other, staff = await _users()
    call = create_call(owner_id=owner.pk, scenario_name=SEED, modality="voice", agent={"model": "gold-replay"})
    events = call.listen()
    call.start()
    pcs: list[RTCPeerConnection] = []
    try:
        tester_heard: list[np.ndarray] = []
        pcs.append(await _tester_browser(call, tester_heard))
        run_id = (await _event(events, "run"))["run_id"]
        assert hosts_run(run_id)
        async with asyncio.timeout(60):  # the bridge registers the call as it opens the conversation
            while registry.find((run_id, SEED)) is None:
                assert not call.ended, call.history
                await asyncio.sleep(0.05)
        page_client = AsyncClient()
        await page_client.aforce_login(owner)
        page = (await page_client.get(f"/runs/{run_id}/")).content.decode()
        assert f'data-listen-url="/voice/listen/{run_id}/{SEED}/offer/"' in page, "the run page offers Listen"
        status, body, pc, _, _ = await _listen(other, run_id)
        pcs.append(pc)
        assert status == 403 and "owner or staff" in body["error"]
        listeners = []
        for user in (owner, staff):
            status, body, pc, heard, ended = await _listen(user, run_id)
            pcs.append(pc)
            assert status == 200 and body["type"] == "answer", body
            listeners.append((heard, ended))
        await _event(events, "turn")  # the agent's greeting has been spoken
        await asyncio.sleep(1.0)
        assert call.hang_up("The caller hung up.")
        ended_event = await _event(events, "ended")
        for heard, ended in listeners:
            await asyncio.wait_for(ended.wait(), 10)  # the call's end ends every listener's track
            assert _loud(heard), "the listener hears the agent"
        assert _loud(tester_heard), "the tester hears the agent (the call's Opus packets decode)"
    finally:
        call.hang_up("test teardown")
        for pc in pcs:
            await pc.close()
        if call.task is not None:
            await asyncio.wait_for(asyncio.gather(call.task, return_exceptions=True), 30)
    assert ended_event["stop_reason"] == "[SIMULATOR_EXIT]"
    assert not hosts_run(run_id) and registry.find((run_id, SEED)) is None


async def test_listen_waits_for_a_human_call_of_this_process_that_is_not_on_the_line_yet(call_settings, tmp_path):
    from scoring.models import Run

    owner, _, _ = await _users()
    run = await sync_to_async(Run.objects.create)(timestamp="20260101_000000", session_dir=str(tmp_path / "eval"),
                                                  owner=owner, source=Run.Source.HUMAN, modality="voice")
    call = create_call(owner_id=owner.pk, scenario_name=SEED, modality="voice", agent={"model": "gold-replay"})
    pcs = []
    try:
        call._opened(run.pk)  # what the runner's on_open does once the run row exists
        status, body, pc, _, _ = await _listen(owner, run.pk)
        pcs.append(pc)
        assert status == 404 and body["retry"] is True and "not live" in body["error"], body
        call.state = "ended"
        status, body, pc, _, _ = await _listen(owner, run.pk)
        pcs.append(pc)
        assert status == 404 and body["retry"] is False, "an ended call is no longer hosted here"
    finally:
        for pc in pcs:
            await pc.close()
        await call.peer.aclose()
