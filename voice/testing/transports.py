"""Serve a ``BotHost`` over either transport for tests: one suite covers both (architecture.md)."""
from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator, Literal

from voice.bots.host import BotHost
from voice.bridge.endpoints import InProcessEndpoint, PeerEndpoint, WebSocketEndpoint
from voice.protocol.websocket import serve_websocket

Transport = Literal["inproc", "ws"]
TRANSPORTS: tuple[Transport, ...] = ("inproc", "ws")


@asynccontextmanager
async def hosted(host: BotHost, transport: Transport, *, label: str = "bot") -> AsyncIterator[PeerEndpoint]:
    """An endpoint for ``host``: in process, or a WebSocket server on 127.0.0.1, port 0."""
    if transport == "inproc":
        endpoint = InProcessEndpoint(host, label=label)
        try:
            yield endpoint
        finally:
            await endpoint.aclose()
        return
    server = await serve_websocket(host, "127.0.0.1", 0)
    try:
        yield WebSocketEndpoint(server.url, label=label, attempts=1)
    finally:
        await server.close()
