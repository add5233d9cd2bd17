"""Issue 14 item 2: EVASITE_BOT_TOKEN goes only to the bot servers the operator listed
(EVASITE_BOT_TOKEN_URLS); a bot URL a user types gets no credential — the preflight, the run's
own connections and the call page."""
from __future__ import annotations

import pytest

from tests.security.conftest import BOT_TOKEN
from tests.security.helpers import form_errors, logged_in_session, next_event, start_call, start_run
from tests.security.hostile import RecordingBot
from voice.bridge.endpoints import WebSocketEndpoint

SEED = "eva_airline__1_1_3"


@pytest.fixture
def their_bot() -> RecordingBot:
    """A 'bot server' of the hostile user's: it records the handshake's headers and hangs up."""
    bot = RecordingBot().start()
    yield bot
    bot.stop()


@pytest.mark.slow(seconds=5)
async def test_the_preflight_sends_the_token_only_to_the_operators_bot(site, trusted_bot, their_bot) -> None:
    session = await logged_in_session(site)
    try:
        for bot in (their_bot, trusted_bot):
            status, page, run_id = await start_run(session, site, agent_url=bot.url)
            assert run_id is None  # both hang up during the handshake
            assert form_errors(page) == [f"--agent-url {bot.url}: the agent bot closed the connection during "
                                         "the client-ready handshake"]
    finally:
        await session.close()
    assert len(their_bot.headers) == 1 and "authorization" not in their_bot.headers[0]
    assert trusted_bot.headers[-1]["authorization"] == f"Bearer {BOT_TOKEN}"


@pytest.mark.slow(seconds=5)
async def test_the_call_page_sends_no_token_to_a_typed_bot_url(site, their_bot) -> None:
    session = await logged_in_session(site)
    try:
        ws, reply = await start_call(session, site, SEED, agent={"url": their_bot.url})
        assert reply["type"] == "call"
        failed = await next_event(ws, {"failed", "ended"}, timeout=60)
        await ws.close()
    finally:
        await session.close()
    assert failed["type"] == "failed" and "closed the connection during the client-ready handshake" in failed["message"]
    assert their_bot.headers and all("authorization" not in headers for headers in their_bot.headers)


async def test_the_bridge_sends_the_token_only_under_a_listed_prefix(settings, monkeypatch, their_bot) -> None:
    monkeypatch.setenv("EVASITE_BOT_TOKEN", "tok-from-env")
    settings.EVASITE_BOT_TOKEN = "tok-from-env"
    settings.EVASITE_BOT_TOKEN_URLS = [f"{their_bot.url}/bots"]
    for path in ("/", "/botsx", "/bots/../x"):
        channel = await WebSocketEndpoint(their_bot.url + path, attempts=1).connect()
        await channel.close()
    lookalike = f"ws://127.0.0.1:{their_bot.port}@127.0.0.1:{their_bot.port}/bots"  # user info, never
    channel = await WebSocketEndpoint(lookalike, attempts=1).connect()
    await channel.close()
    assert len(their_bot.headers) == 4
    assert not any("tok-from-env" in value for headers in their_bot.headers for value in headers.values())
    channel = await WebSocketEndpoint(f"{their_bot.url}/bots/agent", attempts=1).connect()
    await channel.close()
    assert their_bot.headers[-1]["authorization"] == "Bearer tok-from-env"
