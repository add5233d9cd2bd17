"""Reachability checks before the first scenario: one line naming the flag, URL and what failed."""
from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from scoring.runs.preflight import PreflightError, check_bot_url, check_llm_url, check_run_endpoints
from scoring.runs.options import RunOptions
from tests.services import free_port
from tests.streaming_standin import StreamingChatStandIn
from voice.protocol.websocket import serve_websocket
from voice.testing.double import DoubleOptions, double_host


async def test_unreachable_bot_url_names_the_url_and_the_refusal():
    url = f"ws://127.0.0.1:{free_port()}"
    with pytest.raises(PreflightError) as caught:
        await check_bot_url("agent", url, "text")
    assert str(caught.value) == (f"--agent-url {url}: cannot reach the agent bot (connection refused); "
                                 "tried one WebSocket connection")


async def test_bot_of_the_other_modality_is_named_with_both_modalities():
    server = await serve_websocket(double_host(DoubleOptions(role="user", modality="voice")))
    try:
        with pytest.raises(PreflightError, match="user bot .* serves voice modality but this run uses text modality"):
            await check_run_endpoints(RunOptions(user_url=server.url, modality="text"))
        await check_bot_url("user", server.url, "voice")  # the right modality passes
    finally:
        await server.close()


async def test_llm_url_refused_unauthorised_and_not_an_api():
    closed = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(PreflightError) as caught:
        await asyncio.to_thread(check_llm_url, "agent", closed, "m", None)
    assert str(caught.value) == f"--agent-llm-url {closed}: cannot reach the server (connection refused); tried GET models"

    refusing = await StreamingChatStandIn([], models_status=401).start()
    bare = web.AppRunner(web.Application())  # answers 404 to everything
    await bare.setup()
    site = web.TCPSite(bare, "127.0.0.1", 0)
    await site.start()
    bare_url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"
    try:
        with pytest.raises(PreflightError, match=r"refused the API key \(HTTP 401 for GET /models\); set USER_KEY"):
            await asyncio.to_thread(check_llm_url, "user", refusing.base_url, "m", "USER_KEY")
        with pytest.raises(PreflightError, match=r"no OpenAI-compatible API there \(HTTP 404 for GET /models and POST"):
            await asyncio.to_thread(check_llm_url, "agent", bare_url, "m", None)
        working = await StreamingChatStandIn([]).start()
        try:
            await asyncio.to_thread(check_llm_url, "agent", working.base_url, "m", None)
        finally:
            await working.stop()
    finally:
        await refusing.stop()
        await bare.cleanup()
