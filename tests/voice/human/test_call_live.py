"""Signalling and control misuse against the running ASGI app (daphne on a free loopback port):
bad, replayed and second offers over the call's socket, someone else's call, a follower's offer,
malformed control messages, a closed tab, a silent tester. (Two testers at once: test_call_browser.py, in two browser contexts.)"""
from __future__ import annotations

import json

import aiohttp
import pytest

from tests.browser import LiveSite, start_site
from tests.voice.human.helpers import SEED, client_offer, logged_in_session, next_event, offer_over, open_socket

pytestmark = pytest.mark.slow(seconds=27)


@pytest.fixture(scope="module")
def call_site(tmp_path_factory) -> LiveSite:
    site = start_site(tmp_path_factory.mktemp("call_site"), EVASITE_TTS="espeak", EVASITE_STT="pocketsphinx",
                      EVASITE_CALL_INACTIVITY_TIMEOUT="25")
    site.python("from django.contrib.auth import get_user_model\n"
                "get_user_model().objects.create_user('mallory', password='mallory-pw-123')")
    try:
        yield site
    finally:
        site.stop()


async def test_signalling_misuse_never_hurts_the_call_or_the_server(call_site):
    site = call_site
    tester = await logged_in_session(site)
    mallory = await logged_in_session(site, "mallory", "mallory-pw-123")
    anonymous = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
    pcs = []
    try:
        with pytest.raises(aiohttp.WSServerHandshakeError):
            await open_socket(anonymous, site, f"/ws/call/{SEED}/")
        with pytest.raises(aiohttp.WSServerHandshakeError):
            await open_socket(tester, site, "/ws/call/no_such_scenario/")

        ws = await open_socket(tester, site, f"/ws/call/{SEED}/")
        await ws.send_str("{not json")
        assert (await next_event(ws, {"error"}, timeout=10))["message"]
        pc, offer = await client_offer()
        pcs.append(pc)
        assert (await offer_over(ws, offer))["message"] == "there is no call yet"
        await ws.send_str(json.dumps({"type": "start", "modality": "voice", "agent": {"model": "gold-replay"}}))
        call = await next_event(ws, {"call"}, timeout=10)

        # Bad offers: refused with a reason, and the call still waits for a good one.
        assert (await offer_over(ws, 5))["type"] == "error"
        assert (await offer_over(ws, "v=0\r\no=garbage\r\n"))["status"] == 400
        too_long = await offer_over(ws, "v=0" + "x" * 70_000)
        assert too_long["type"] == "error" and "longer than" in too_long["message"], too_long
        # Someone else's call: no socket, so no offer, no hang-up, no watching; and the owner's
        # second socket only watches.
        with pytest.raises(aiohttp.WSServerHandshakeError):
            await open_socket(mallory, site, f"/ws/calls/{call['id']}/")
        follower = await open_socket(tester, site, f"/ws/calls/{call['id']}/")
        assert (await offer_over(follower, offer))["message"] == "only the caller can connect the call's audio"
        await follower.close()

        answer = await offer_over(ws, offer)
        assert answer["type"] == "answer" and answer["answer"]["sdp"].startswith("v=0"), answer
        from aiortc import RTCSessionDescription

        await pc.setRemoteDescription(RTCSessionDescription(**answer["answer"]))
        # A replayed offer, and a second offer on the live call, are refused.
        assert (await offer_over(ws, offer))["status"] == 409
        second_pc, second_offer = await client_offer()
        pcs.append(second_pc)
        assert (await offer_over(ws, second_offer))["status"] == 409

        assert (await next_event(ws, {"state"}, timeout=60))["state"] == "live"
        greeting = await next_event(ws, {"turn"}, timeout=60)
        assert greeting["speaker"] == "Agent"
        watcher = await open_socket(tester, site, f"/ws/calls/{call['id']}/")  # the owner may watch
        await ws.close()  # the tab is closed mid-call, well inside the site's 25 s of allowed silence
        async with tester.get(f"{site.url}/scenarios/") as response:
            assert response.status == 200  # the server keeps serving while the call ends
        ended = await next_event(watcher, {"ended"}, timeout=60)
        await watcher.close()
        assert ended["stop_reason"] == "[SIMULATOR_EXIT]"
        stored = site.python(
            "from scoring.models import ScenarioResult\n"
            f"r = ScenarioResult.objects.select_related('run__owner').get(pk={ended['result_id']})\n"
            "print(r.run.source, r.run.owner.username, r.run.modality, r.stop_reason, r.metrics['simulator_end_reported'])")
        assert stored.split() == ["human", "tester", "voice", "[SIMULATOR_EXIT]", "True"]
        async with tester.get(f"{site.url}{ended['result_url']}") as response:
            assert response.status == 200
    finally:
        for pc in pcs:
            await pc.close()
        for session in (tester, mallory, anonymous):
            await session.close()


async def test_a_silent_tester_is_timed_out_and_scored(call_site):
    tester = await logged_in_session(call_site)
    try:
        ws = await open_socket(tester, call_site, f"/ws/call/{SEED}/")
        await ws.send_str(json.dumps({"type": "start", "modality": "text"}))
        ended = await next_event(ws, {"ended", "failed"}, timeout=90)
        await ws.close()
    finally:
        await tester.close()
    assert ended["type"] == "ended" and ended["stop_reason"] == "[INACTIVITY_TIMEOUT]"
