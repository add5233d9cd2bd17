"""Issue 14 items 9 and 10 on the live site: no password-reset pages without mail, a refused
handshake (not an HTTP 500) for an unknown WebSocket path, and WebSocket origins checked with
their port."""
from __future__ import annotations

import os
import sys

import aiohttp
import pytest

from tests.browser import REPO
from tests.security.helpers import logged_in_session
from tests.security.hostile import closed_port
from tests import warm_python

pytestmark = pytest.mark.slow(seconds=5)
SEED = "eva_airline__1_1_3"


async def test_password_reset_is_not_routed_without_mail(site) -> None:
    async with aiohttp.ClientSession() as anonymous:
        for method in ("GET", "POST"):
            async with anonymous.request(method, f"{site.url}/accounts/password_reset/",
                                         data={"email": "tester@example.org"}, allow_redirects=False) as response:
                assert response.status == 404, method
        async with anonymous.get(f"{site.url}/accounts/login/") as response:
            assert response.status == 200


def test_password_reset_is_routed_once_mail_is_configured() -> None:
    probe = ("import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'evasite.settings'); django.setup()\n"
             "from django.urls import NoReverseMatch, reverse\n"
             "try:\n    print(reverse('password_reset'))\nexcept NoReverseMatch:\n    print('unrouted')\n")
    answers = {}
    for host in ("", "smtp.example.org"):
        done = warm_python.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120,
                               env={**os.environ, "EVASITE_EMAIL_HOST": host})
        assert done.returncode == 0, done.stderr
        answers[host] = done.stdout.strip()
    assert answers == {"": "unrouted", "smtp.example.org": "/accounts/password_reset/"}


async def test_an_unknown_websocket_path_is_refused_not_an_error(site) -> None:
    session = await logged_in_session(site)
    try:
        for path in ("/ws/nothing/here/", "/ws/runs/not-a-number/", "/"):
            with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
                await session.ws_connect(f"{site.url.replace('http', 'ws', 1)}{path}", origin=site.url, timeout=10)
            assert caught.value.status == 403, path
    finally:
        await session.close()
    assert "No route found" not in site.log_path.read_text(errors="replace")


async def test_a_websocket_from_another_port_of_this_host_is_refused(site) -> None:
    session = await logged_in_session(site)
    ws_url = f"{site.url.replace('http', 'ws', 1)}/ws/call/{SEED}/"
    try:
        for origin in (f"http://127.0.0.1:{closed_port()}", "http://127.0.0.1", "https://127.0.0.1",
                       "http://evil.example"):
            with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
                await session.ws_connect(ws_url, origin=origin, timeout=10)
            assert caught.value.status == 403, origin
        ws = await session.ws_connect(ws_url, origin=site.url, timeout=10)  # this site's own pages
        await ws.close()
    finally:
        await session.close()
