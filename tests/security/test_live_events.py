"""Issue 14 item 5: a human call's live events (the tester's own words) reach its owner and staff
only, on the live site and whatever EVASITE_PUBLIC_RESULTS says."""
from __future__ import annotations

import json

import aiohttp
import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from tests.security.helpers import logged_in_session, next_event, open_socket, start_call

SEED = "eva_airline__voluntary_date_change"


@pytest.mark.slow(seconds=5)
async def test_only_the_tester_and_staff_follow_a_human_call_live(site) -> None:
    tester = await logged_in_session(site)
    mallory = await logged_in_session(site, "mallory", "mallory-pw-123")
    sam = await logged_in_session(site, "sam", "sam-pw-123")
    try:
        call_ws, reply = await start_call(tester, site, SEED)
        assert reply["type"] == "call"
        run_id = (await next_event(call_ws, {"run"}, timeout=60))["run_id"]
        with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
            await open_socket(mallory, site, f"/ws/runs/{run_id}/")
        assert caught.value.status == 403
        for who in (tester, sam):
            watcher = await open_socket(who, site, f"/ws/runs/{run_id}/")
            assert (await next_event(watcher, {"snapshot"}, timeout=30))["status"] == "running"
            await watcher.close()
        await call_ws.send_str(json.dumps({"type": "hangup"}))
        await next_event(call_ws, {"ended", "failed"}, timeout=120)
        await call_ws.close()
        with pytest.raises(aiohttp.WSServerHandshakeError):  # and not after the call either
            await open_socket(mallory, site, f"/ws/runs/{run_id}/")
    finally:
        for session in (tester, mallory, sam):
            await session.close()


@pytest.mark.django_db(transaction=True)
async def test_public_results_do_not_open_a_human_calls_live_events(settings) -> None:
    from evasite.asgi import application
    from scoring.models import Run

    settings.EVASITE_PUBLIC_RESULTS = True
    human = await sync_to_async(Run.objects.create)(timestamp="20260101_000001", session_dir="/nonexistent/h",
                                                    source=Run.Source.HUMAN)
    web = await sync_to_async(Run.objects.create)(timestamp="20260101_000002", session_dir="/nonexistent/w",
                                                  source=Run.Source.WEB)
    outcomes = {}
    for run in (human, web):
        anonymous = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/", headers=[(b"origin", b"http://testserver")])
        outcomes[run.source] = await anonymous.connect(timeout=10)
        await anonymous.disconnect()
    assert outcomes == {"human": (False, 4403), "web": (True, None)}
