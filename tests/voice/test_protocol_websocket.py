"""WebSocket specifics: protocol errors, connect retries, one session at a time, the token (§2.2)."""
from __future__ import annotations

import asyncio
import time
from contextlib import asynccontextmanager
from typing import AsyncIterator

import pytest
from pipecat.frames.protobufs import frames_pb2
from websockets.asyncio.client import connect
from websockets.asyncio.server import serve

from scoring.core.canonical import db_hash
from tests.voice.test_bridge_session import AGENT, INPUTS, USER
from voice.bridge.config import BridgeConfig
from voice.bridge.endpoints import InProcessEndpoint, WebSocketEndpoint
from voice.bridge.engine import SessionSetupError, run_session
from voice.bridge.requests import handshake, request_or_none
from voice.protocol import rtvi
from voice.protocol.channel import AudioChunk, ConnectionClosed
from voice.protocol.websocket import connect_websocket, serve_websocket
from voice.protocol.wire import UnusedFrame, WireError, decode, encode
from voice.testing.double import DoubleOptions, double_host


async def test_non_frame_message_ends_the_connection_as_protocol_error():
    server = await serve_websocket(double_host(DoubleOptions()))
    try:
        async with connect(server.url) as raw:
            await raw.send(b"\xff\xff not protobuf")
            await asyncio.wait_for(raw.wait_closed(), 3)
            assert raw.close_code == 1002
    finally:
        await server.close()


async def test_text_message_from_the_bot_is_a_protocol_error_on_the_bridge():
    async def text_bot(ws):
        await ws.send("hello")
        await ws.wait_closed()

    async with serve(text_bot, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        channel = await connect_websocket(f"ws://127.0.0.1:{port}", attempts=1)
        with pytest.raises(ConnectionClosed, match="protocol error"):
            await channel.recv()


async def test_connect_gives_up_after_its_attempts():
    server = await serve_websocket(double_host(DoubleOptions()))
    url = server.url
    await server.close()
    with pytest.raises(ConnectionError):
        await connect_websocket(url, attempts=2, backoff=(0.05,))


async def test_a_second_client_is_refused_while_a_session_is_live():
    server = await serve_websocket(double_host(DoubleOptions()))
    try:
        first = await connect_websocket(server.url, attempts=1)
        assert await handshake(first, 3)
        with pytest.raises(ConnectionError, match="409"):
            await connect_websocket(server.url, attempts=1)
        assert await handshake(first, 3), "the live session is untouched"
        await first.close()
        second = await connect_websocket(server.url, attempts=3, backoff=(0.1,))  # slot free again
        assert await handshake(second, 3)
        await second.close()
    finally:
        await server.close()



async def test_a_conversation_opened_the_moment_setup_closed_gets_the_set_up_bot():
    """The bridge reconnects at once after setup; a bot that takes a while to tear the setup
    connection down must still hand the conversation the bot it just configured, not a blank one."""
    from voice.bridge.requests import request

    hosts: list = []

    def new_host():
        host = double_host(DoubleOptions())
        inner_serve = host.serve

        async def serve_then_linger(channel) -> None:
            await inner_serve(channel)
            await asyncio.sleep(0.3)  # a slow brain.stop()

        host.serve = serve_then_linger
        hosts.append(host)
        return host

    server = await serve_websocket(new_host)
    try:
        setup = await connect_websocket(server.url, attempts=1)
        assert await handshake(setup, 3)
        assert await request(setup, "update_system_prompt", {"prompt": "You are the agent.", "tools": "{}"},
                             side="agent", timeout=3) is True
        await setup.close()
        conversation = await connect_websocket(server.url, attempts=20, backoff=(0.05,))
        assert await handshake(conversation, 3)
        await conversation.close()
        assert len(hosts) == 1 and hosts[0].prompt.startswith("You are the agent.")
    finally:
        await server.close()

async def test_a_token_server_refuses_clients_without_the_token(settings):
    server = await serve_websocket(double_host(DoubleOptions()), token="s3cret")
    try:
        settings.EVASITE_BOT_TOKEN, settings.EVASITE_BOT_TOKEN_URLS = "", [server.url]
        with pytest.raises(ConnectionError, match="401"):
            await connect_websocket(server.url, attempts=3, backoff=(0.1,))
        settings.EVASITE_BOT_TOKEN = "wrong"
        with pytest.raises(ConnectionError, match="401"):
            await connect_websocket(server.url, attempts=1)
        settings.EVASITE_BOT_TOKEN, settings.EVASITE_BOT_TOKEN_URLS = "s3cret", []
        with pytest.raises(ConnectionError, match="401"):  # not one of the operator's bot URLs
            await connect_websocket(server.url, attempts=1)
        settings.EVASITE_BOT_TOKEN_URLS = [server.url]
        channel = await connect_websocket(server.url, attempts=1)
        assert await handshake(channel, 3)
        await channel.close()
    finally:
        await server.close()


async def test_a_bot_of_the_other_modality_is_refused_at_setup():
    """The bot states its modality in bot-ready; a text run refuses a voice bot at once."""
    server = await serve_websocket(double_host(DoubleOptions(modality="voice")))
    try:
        started = time.monotonic()
        with pytest.raises(SessionSetupError, match="serves voice modality but this run uses text modality"):
            await run_session(scenario_inputs=INPUTS, agent=WebSocketEndpoint(server.url, attempts=1),
                              user=InProcessEndpoint(double_host(DoubleOptions(role="user", script=USER))),
                              config=BridgeConfig(modality="text"))
        assert time.monotonic() - started < 5
    finally:
        await server.close()


def _frame(kind: str, **fields) -> bytes:
    frame = frames_pb2.Frame()
    getattr(frame, kind).SetInParent()
    for name, value in fields.items():
        setattr(getattr(frame, kind), name, value)
    return frame.SerializeToString()


def test_decode_skips_frames_the_protocol_does_not_use():
    for data in (
        _frame("interruption"),
        _frame("transcription", text="hi", user_id="u"),
        _frame("text", text="hello"),
        b"",  # a frame with no kind at all
        _frame("message", data="not json"),
        _frame("message", data="[1, 2]"),
        _frame("message", data="[" * 100_000 + "]" * 100_000),  # RecursionError inside json
    ):
        with pytest.raises(UnusedFrame):
            decode(data)
    with pytest.raises(WireError):
        decode(b"\xff\xff not protobuf")
    assert decode(encode(rtvi.bot_ready())) == rtvi.bot_ready()


async def test_pipecat_frames_mid_stream_are_skipped_not_a_protocol_error():
    async def pipecat_like_bot(ws):
        for data in (_frame("interruption"), _frame("transcription", text="hi"), _frame("message", data="{oops"),
                     encode(rtvi.bot_ready())):
            await ws.send(data)
        await ws.wait_closed()

    async with serve(pipecat_like_bot, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        channel = await connect_websocket(f"ws://127.0.0.1:{port}", attempts=1)
        assert await channel.recv() == rtvi.bot_ready()
        assert not channel.closed
        await channel.close()


async def test_a_bad_url_is_a_connection_error_at_once():
    for url in ("http://localhost:8765", "ws://localhost:port", "not a url"):
        started = time.monotonic()
        with pytest.raises(ConnectionError, match="cannot connect"):
            await connect_websocket(url, attempts=5, backoff=(5,))
        # A retry would first wait the 5 s backoff; the margin below it is for a loaded machine.
        assert time.monotonic() - started < 4, "no retries for a URL that can never work"


async def test_a_bad_agent_url_is_a_setup_error():
    user = InProcessEndpoint(double_host(DoubleOptions()))
    try:
        with pytest.raises(SessionSetupError, match="cannot connect to the agent bot"):
            await run_session(scenario_inputs=INPUTS, agent=WebSocketEndpoint("http://nowhere"), user=user,
                              config=BridgeConfig(modality="text"))
    finally:
        await user.aclose()


async def test_request_gives_up_when_the_peer_stops_reading():
    async def frozen_bot(ws):
        await ws.wait_closed()  # never reads: the socket buffers fill up

    async with serve(frozen_bot, "127.0.0.1", 0, max_size=None, close_timeout=0.1) as server:
        port = server.sockets[0].getsockname()[1]
        channel = await connect_websocket(f"ws://127.0.0.1:{port}", attempts=1, keepalive_timeout=None)
        chunk = AudioChunk(bytes(256 * 1024), 16000)
        for _ in range(1000):
            try:
                await asyncio.wait_for(channel.send(chunk), 0.5)
            except TimeoutError:
                break  # a send now waits for room that never comes
        else:
            pytest.fail("the peer's buffers never filled")
        logs: list[str] = []
        started = time.monotonic()
        pulled = await request_or_none(channel, "get_context_history", {}, side="agent", timeout=0.5, log=logs.append)
        assert pulled is None
        assert await handshake(channel, 0.5) is False
        assert time.monotonic() - started < 3
        assert logs and "TimeoutError" in logs[0]


@asynccontextmanager
async def _pipecat_transport_in_front_of(url: str) -> AsyncIterator[str]:
    """A proxy that adds what pipecat's WebsocketServerOutputTransport sends on a barge-in: an
    interruption frame (and a transcription frame) before every ``bot-started-speaking``."""

    async def handler(bridge_ws) -> None:
        async with connect(url, max_size=None) as bot_ws:

            async def upstream() -> None:
                async for data in bridge_ws:
                    await bot_ws.send(data)

            async def downstream() -> None:
                async for data in bot_ws:
                    if rtvi.message_type(decode(data)) == "bot-started-speaking":  # type: ignore[arg-type]
                        await bridge_ws.send(_frame("interruption"))
                        await bridge_ws.send(_frame("transcription", text="sorry, go on", user_id="u"))
                    await bridge_ws.send(data)

            pumps = [asyncio.create_task(upstream()), asyncio.create_task(downstream())]
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)

    async with serve(handler, "127.0.0.1", 0, max_size=None) as proxy:
        yield f"ws://127.0.0.1:{proxy.sockets[0].getsockname()[1]}"


async def test_interruption_and_transcription_frames_mid_session_are_ignored():
    agent_server = await serve_websocket(double_host(DoubleOptions(script=AGENT), db_hasher=db_hash))
    user = InProcessEndpoint(double_host(DoubleOptions(role="user", script=USER)))
    config = BridgeConfig(modality="text", duration_seconds=6.0, inactivity_timeout=1.0, settle=0.2,
                          request_timeout=2.0, handshake_timeout=2.0)
    try:
        async with _pipecat_transport_in_front_of(agent_server.url) as url:
            outcome = await asyncio.wait_for(
                run_session(scenario_inputs=INPUTS, agent=WebSocketEndpoint(url, attempts=1), user=user, config=config),
                timeout=15,
            )
    finally:
        await user.aclose()
        await agent_server.close()
    assert outcome.stop_reason == "[EXIT]", "an interruption frame is not a protocol error"
    assert [t["role"] for t in outcome.turns] == ["agent", "user", "agent", "user", "agent"]
    assert outcome.agent_pull_ok
