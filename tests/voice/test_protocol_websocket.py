"""WebSocket specifics: protocol errors, connect retries, single-client replacement (§2.2)."""
from __future__ import annotations

import asyncio

import pytest
from websockets.asyncio.client import connect

from voice.bridge.requests import handshake, wait_for
from voice.protocol.channel import ConnectionClosed
from voice.protocol.websocket import connect_websocket, serve_websocket
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

    from websockets.asyncio.server import serve

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


async def test_a_new_client_replaces_the_previous_one():
    server = await serve_websocket(double_host(DoubleOptions()))
    try:
        first = await connect_websocket(server.url, attempts=1)
        assert await handshake(first, 3)
        second = await connect_websocket(server.url, attempts=1)
        assert await handshake(second, 3)
        with pytest.raises(ConnectionClosed):
            await wait_for(first, lambda item: False, 3)
        await second.close()
    finally:
        await server.close()
