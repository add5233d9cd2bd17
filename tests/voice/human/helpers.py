"""What the tests' human tester says, and how it reaches the running site (login, WebSocket)."""
from __future__ import annotations

import json
import re
from typing import Any

import aiohttp

from tests.browser import PASSWORD, USERNAME, LiveSite

SEED = "eva_airline__voluntary_date_change"
OTHER_SEED = "eva_airline__cancellation_refund"
"""A second scenario, for two calls at once."""
OPENING = "Hi, I need to change my flight to March twenty-fifth."
# "Z as in zebra": Piper's Z is heard as C by the recognisers; the word survives (stack-notes).
IDENTITY_SPOKEN = "My confirmation number is Z as in zebra, K, three, F, F, W. My last name is Rodriguez."
IDENTITY_TYPED = "My confirmation number is Z, K, three, F, F, W, and my last name is Rodriguez."
ACCEPT = "Yes, please go ahead."
DONE = "No, that is all. Thank you, goodbye."


def reply_to(agent_text: str, *, spoken: bool) -> str:
    """The passenger of the seed voluntary_date_change, answering the built-in agents' lines."""
    text = agent_text.lower()
    if re.search(r"confirmation number|last name|spell", text):
        return IDENTITY_SPOKEN if spoken else IDENTITY_TYPED
    if "go ahead" in text:
        return ACCEPT
    if "anything else" in text:
        return DONE
    return OPENING


def typed_identity(scenario_name: str) -> str:
    """The identity line a tester types for any scenario (its code spelled out, its last name)."""
    from scenarios.registry import get_eval_scenario

    scenario = get_eval_scenario(scenario_name)
    code, name = scenario.confirmation_number, scenario.information_required["Passenger last name"]
    return f"My confirmation number is {', '.join(code)}, and my last name is {name}."


def typed_reply(agent_text: str, scenario_name: str) -> str:
    """``reply_to`` in text for any scenario: the seed's lines, with that scenario's own identity."""
    line = reply_to(agent_text, spoken=False)
    return typed_identity(scenario_name) if line == IDENTITY_TYPED else line


async def logged_in_session(site: LiveSite, username: str = USERNAME, password: str = PASSWORD) -> aiohttp.ClientSession:
    """An HTTP session holding the site's session and CSRF cookies (loopback IP: unsafe jar)."""
    session = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True),
                                    timeout=aiohttp.ClientTimeout(total=30))
    async with session.get(f"{site.url}/accounts/login/") as response:
        page = await response.text()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    async with session.post(f"{site.url}/accounts/login/", allow_redirects=False,
                            data={"username": username, "password": password, "csrfmiddlewaretoken": token}) as response:
        assert response.status == 302, f"login as {username} failed ({response.status})"
    return session


def csrf_headers(session: aiohttp.ClientSession, site: LiveSite) -> dict[str, str]:
    token = next((c.value for c in session.cookie_jar if c.key == "csrftoken"), "")
    return {"X-CSRFToken": token, "Referer": f"{site.url}/", "Origin": site.url}


async def open_socket(session: aiohttp.ClientSession, site: LiveSite, path: str) -> aiohttp.ClientWebSocketResponse:
    return await session.ws_connect(f"{site.url.replace('http', 'ws', 1)}{path}", origin=site.url, timeout=10)


async def next_event(ws: aiohttp.ClientWebSocketResponse, kinds: set[str], timeout: float = 60) -> dict[str, Any]:
    """The next event of one of ``kinds`` (others are skipped); fails on a closed socket."""
    while True:
        message = await ws.receive(timeout=timeout)
        if message.type != aiohttp.WSMsgType.TEXT:
            raise AssertionError(f"socket ended: {message.type} {message.data!r}")
        event = json.loads(message.data)
        if event["type"] in kinds:
            return event


async def client_offer() -> tuple[Any, str]:
    """A browser-like SDP offer (an aiortc peer with a silent microphone): the peer, which the
    caller closes, and its offer's SDP."""
    from aiortc import RTCPeerConnection
    from aiortc.mediastreams import AudioStreamTrack

    from voice.webrtc.config import allow_loopback_candidates

    allow_loopback_candidates()
    pc = RTCPeerConnection()
    pc.addTrack(AudioStreamTrack())
    await pc.setLocalDescription(await pc.createOffer())
    return pc, pc.localDescription.sdp


async def offer_over(ws: aiohttp.ClientWebSocketResponse, sdp: Any, timeout: float = 30) -> dict[str, Any]:
    """Send an offer over the call's socket; the server's ``answer``, ``offer-refused`` or ``error``."""
    await ws.send_str(json.dumps({"type": "offer", "sdp": sdp}))
    return await next_event(ws, {"answer", "offer-refused", "error"}, timeout=timeout)
