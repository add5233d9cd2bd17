"""Issue 14 item 6: a tester who hangs up before or during the call's setup ends the call at once;
it never holds a pipeline until the inactivity timeout (live site, real WebRTC offer, a real
bot server whose setup the test holds until the hang-up has been handled)."""
from __future__ import annotations

import asyncio
import json

import pytest

from tests.security.conftest import INACTIVITY
from tests.security.helpers import logged_in_session, next_event, start_call
from tests.voice.human.helpers import client_offer, offer_over
from voice.protocol.websocket import serve_websocket
from voice.testing.double import default_options, double_host

pytestmark = pytest.mark.slow(seconds=5)
SEED = "eva_airline__voluntary_date_change"


async def test_a_hang_up_right_after_the_offer_ends_the_call(site) -> None:
    tester = await logged_in_session(site)
    pc = None
    try:
        ws, call = await start_call(tester, site, SEED, modality="voice")
        assert call["type"] == "call"
        pc, offer = await client_offer()  # the answer is never applied: the media never comes up
        answer = await offer_over(ws, offer)
        assert answer["type"] == "answer" and answer["answer"]["type"] == "answer", answer
        await ws.send_str(json.dumps({"type": "hangup"}))
        end = await next_event(ws, {"failed", "ended"}, timeout=INACTIVITY * 6)
        await ws.close()
    finally:
        if pc is not None:
            await pc.close()
        await tester.close()
    assert end == {"type": "failed", "message": "The call ended before it was connected."}


class _HeldBot:
    """A protocol bot that answers nothing until ``release`` is set."""

    def __init__(self, release: asyncio.Event) -> None:
        self._host = double_host(default_options("agent", "text"))
        self._release = release

    async def serve(self, channel) -> None:
        await self._release.wait()
        await self._host.serve(channel)


async def test_a_hang_up_during_setup_ends_the_call(site) -> None:
    release = asyncio.Event()
    bot = await serve_websocket(_HeldBot(release))
    tester = await logged_in_session(site)
    try:
        ws, call = await start_call(tester, site, SEED, agent={"url": bot.url})
        assert call["type"] == "call"
        await ws.send_str(json.dumps({"type": "hangup"}))
        await ws.send_str("not json")  # answered only once the hang-up before it has been handled
        assert (await next_event(ws, {"error"}, timeout=30))["message"] == "control message is not valid JSON"
        release.set()  # now the agent's setup can go on
        end = await next_event(ws, {"failed", "ended"}, timeout=INACTIVITY * 6)
        await ws.close()
    finally:
        await tester.close()
        await bot.close()
    assert end["type"] == "ended" and end["stop_reason"] == "[SIMULATOR_EXIT]", end
