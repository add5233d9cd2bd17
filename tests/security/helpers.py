"""Requests the way a logged-in (hostile) site user makes them: the New-run form, the call page's
socket, raw WebSocket handshakes."""
from __future__ import annotations

import asyncio
import html
import json
import re
from typing import Any

import aiohttp

from tests.browser import LiveSite
from tests.pages.web_helpers import form_data
from tests.voice.human.helpers import csrf_headers, logged_in_session, next_event, open_socket

__all__ = ["logged_in_session", "next_event", "open_socket", "start_run", "start_call", "wait_for_run"]


async def start_run(session: aiohttp.ClientSession, site: LiveSite, **fields: str) -> tuple[int, str, int | None]:
    """POST the New-run form (a valid one-scenario text run, with ``fields``): (status, page
    text unescaped, the started run's id when it redirected to one)."""
    async with session.get(f"{site.url}/runs/new/") as response:
        assert response.status == 200
    values = form_data(**fields)
    body = [(name, item) for name, value in values.items()
            for item in (value if isinstance(value, list) else [value])]
    async with session.post(f"{site.url}/runs/new/", data=body, headers=csrf_headers(session, site),
                            allow_redirects=False) as response:
        text = html.unescape(await response.text())
        location = response.headers.get("Location", "")
        match = re.search(r"/runs/(\d+)/$", location)
        return response.status, text, int(match.group(1)) if match else None


def form_errors(page: str) -> list[str]:
    """The form's non-field errors, as shown."""
    block = re.search(r'<div class="error" role="alert">(.*?)</div>', page, re.S)
    return re.findall(r"<p>(.*?)</p>", block.group(1), re.S) if block else []


async def start_call(session: aiohttp.ClientSession, site: LiveSite, scenario: str, *, modality: str = "text",
                     agent: dict[str, str] | None = None) -> tuple[aiohttp.ClientWebSocketResponse, dict[str, Any]]:
    """Open the call page's socket and send ``start``; returns the socket and the first reply
    that is a ``call`` or an ``error``."""
    ws = await open_socket(session, site, f"/ws/call/{scenario}/")
    await ws.send_str(json.dumps({"type": "start", "modality": modality, "agent": agent or {"model": "gold-replay"}}))
    return ws, await next_event(ws, {"call", "error"}, timeout=30)


async def wait_for_run(site: LiveSite, run_id: int, timeout: float = 180) -> str:
    """Wait (off the event loop: a test's own bot may live on it) until run ``run_id`` is no
    longer running; its status."""
    return await asyncio.to_thread(site.python,
        "import time\nfrom scoring.models import Run\n"
        f"deadline = time.monotonic() + {timeout}\n"
        f"while Run.objects.get(pk={run_id}).status == 'running' and time.monotonic() < deadline:\n"
        "    time.sleep(0.2)\n"
        f"print(Run.objects.get(pk={run_id}).status)", timeout + 60)
