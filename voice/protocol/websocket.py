"""The WebSocket form of a bridge <-> bot connection (harness.md §2.2).

Binary messages only, each one pipecat protobuf ``Frame`` (``wire.py``). The bridge is the client;
a bot is a single-client server. Frames this protocol does not use (pipecat's text, transcription
and interruption frames, unreadable message payloads) are skipped with a log line; a text message or
bytes that are not a frame at all end the connection as a protocol error, surfacing as
``ConnectionClosed`` like any other loss of the peer.
"""
from __future__ import annotations

import asyncio
import hmac
import logging
from typing import Callable, Protocol, Sequence, Union

import websockets
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.http11 import Request, Response

from voice.protocol.bot_token import TOKEN_ENV, token_for  # noqa: F401 - TOKEN_ENV re-exported
from voice.protocol.bot_sessions import ClientSessions, ObservedChannel
from voice.protocol.channel import Channel, ConnectionClosed, Item
from voice.protocol.wire import UnusedFrame, WireError, decode, encode

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 32 * 1024 * 1024
"""Context-history responses can be large; the spec asks for at least 16 MiB."""
PING_INTERVAL = 20.0
PING_TIMEOUT = 10.0
CLOSE_TIMEOUT = 10.0
PROTOCOL_ERROR = 1002
SERVER_PING_TIMEOUT = 60.0
"""A bot server drops a client that stopped answering pings, so a vanished bridge frees the
single session slot (generous: the bridge's loop may be busy with speech)."""


class WebSocketChannel:
    """A ``Channel`` over one websockets connection (client or server side)."""

    def __init__(self, ws: ClientConnection | ServerConnection) -> None:
        self._ws = ws
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed or self._ws.close_code is not None

    async def send(self, item: Item) -> None:
        if self.closed:
            raise ConnectionClosed("websocket closed")
        try:
            await self._ws.send(encode(item))
        except websockets.ConnectionClosed as exc:
            self._closed = True
            raise ConnectionClosed(str(exc)) from exc

    async def recv(self) -> Item:
        while True:
            if self._closed:
                raise ConnectionClosed("websocket closed")
            try:
                data = await self._ws.recv()
            except websockets.ConnectionClosed as exc:
                self._closed = True
                raise ConnectionClosed(str(exc)) from exc
            if isinstance(data, str):
                raise await self._protocol_error("text message on a binary-only connection")
            try:
                return decode(data)
            except UnusedFrame as exc:
                logger.log(logging.WARNING if exc.malformed else logging.DEBUG, "skipping inbound frame: %s", exc)
            except WireError as exc:
                raise await self._protocol_error(str(exc)) from exc

    async def close(self) -> None:
        if self._closed and self._ws.close_code is not None:
            return
        self._closed = True
        try:
            await self._ws.close()
        except Exception:  # closing an already broken socket must never raise
            logger.debug("websocket close failed", exc_info=True)

    async def _protocol_error(self, reason: str) -> ConnectionClosed:
        """Close with 1002 and return the exception that ends the caller's receive."""
        self._closed = True
        try:
            await self._ws.close(PROTOCOL_ERROR, reason[:120])
        except Exception:
            logger.debug("websocket close after protocol error failed", exc_info=True)
        return ConnectionClosed(f"protocol error: {reason}")


async def connect_websocket(
    url: str,
    *,
    attempts: int = 5,
    backoff: Sequence[float] = (1, 2, 4, 8),
    keepalive_timeout: float | None = PING_TIMEOUT,
) -> Channel:
    """Connect to a bot with retries (§3.2 step 2); raises ``ConnectionError`` after the last try,
    or at once for a malformed URL.

    ``keepalive_timeout=None`` disables the ping timeout, as the conversation connections should
    (a long LLM pause must not drop the socket).
    """
    last_error: Exception | None = None
    token = token_for(url)  # only the operator's own bot servers get the bot token
    headers = {"Authorization": f"Bearer {token}"} if token else None
    for attempt in range(max(1, attempts)):
        if attempt:
            await asyncio.sleep(backoff[min(attempt - 1, len(backoff) - 1)] if backoff else 0)
        try:
            ws = await connect(
                url,
                max_size=MAX_MESSAGE_BYTES,
                ping_interval=PING_INTERVAL,
                ping_timeout=keepalive_timeout,
                close_timeout=CLOSE_TIMEOUT,
                compression=None,
                proxy=None,
                open_timeout=10,
                additional_headers=headers,
            )
            return WebSocketChannel(ws)
        except (websockets.InvalidURI, ValueError) as exc:
            # A malformed --agent-url never becomes valid: no retries.
            raise ConnectionError(f"cannot connect to {url}: {exc}") from exc
        except websockets.InvalidStatus as exc:
            if exc.response.status_code in (401, 403):  # a wrong token stays wrong
                raise ConnectionError(f"{url} refused the connection: {_refusal(exc)}") from exc
            last_error = ConnectionError(_refusal(exc))
            logger.info("connect %s attempt %d refused: %s", url, attempt + 1, last_error)
        except Exception as exc:  # refused, timed out, bad handshake, ...: retry
            last_error = exc
            logger.info("connect %s attempt %d failed: %s", url, attempt + 1, exc)
    raise ConnectionError(f"could not connect to {url} after {attempts} attempts: {last_error}") from last_error


def _refusal(exc: "websockets.InvalidStatus") -> str:
    body = exc.response.body.decode("utf-8", "replace").strip() if exc.response.body else ""
    return f"HTTP {exc.response.status_code}" + (f" ({body})" if body else "")


class ServesChannels(Protocol):
    """What the server needs from a bot host (``voice.bots.host.BotHost``)."""

    async def serve(self, channel: Channel) -> None: ...


HostLike = Union[ServesChannels, Callable[[], ServesChannels]]


class BotServer:
    """A running single-client bot server; ``port`` is the bound port (works with port 0).

    One session at a time: while a client's connection is open, another is refused with HTTP
    409 (the bridge retries; it opens a fresh connection per phase after closing the last one),
    so nobody can take over a live bridge connection. With ``token`` set, a client must send it
    as ``Authorization: Bearer <token>`` (HTTP 401 otherwise). A request with an ``Origin`` header
    comes from a web page (browsers always send one, the bridge never does) and is refused with
    403, so a page open in a developer's browser cannot drive a loopback bot. Each client session
    gets the bot ``sessions`` hands out (a fresh one per session for ``run_bot``).
    """

    def __init__(self, sessions: ClientSessions[ServesChannels], host: str, *, token: str | None = None) -> None:
        self._sessions = sessions
        self.host = host
        self.port = 0
        self._token = token
        self._server: Server | None = None
        self._active: WebSocketChannel | None = None
        self._serving = asyncio.Lock()
        """Held for a connection's whole life, teardown included: a client may reconnect the moment
        it closed, and the new connection must not pick its bot before the old one has said how
        its session ended (a setup connection keeps its bot for the conversation)."""

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    def _live(self) -> bool:
        return self._active is not None and not self._active.closed

    def _admit(self, connection: ServerConnection, request: Request) -> Response | None:
        if request.headers.get("Origin") is not None:
            return connection.respond(403, "web pages may not connect to a bot server\n")
        if self._token:
            sent = request.headers.get("Authorization", "")
            if not hmac.compare_digest(sent.encode(), f"Bearer {self._token}".encode()):
                return connection.respond(401, "missing or wrong bot token\n")
        if self._live():
            return connection.respond(409, "another session is live on this bot\n")
        return None

    async def _handle(self, ws: ServerConnection) -> None:
        channel = WebSocketChannel(ws)
        if self._live():  # two clients admitted at the same moment: the later one is refused
            await ws.close(1013, "another session is live on this bot")
            return
        self._active = channel  # from here on other clients are refused
        async with self._serving:
            observed = ObservedChannel(channel)
            try:
                await self._sessions.host_for_connection().serve(observed)
            finally:
                self._sessions.connection_closed(observed)
                if self._active is channel:
                    self._active = None
                await channel.close()

    async def start(self, port: int) -> None:
        self._server = await serve(
            self._handle,
            self.host,
            port,
            process_request=self._admit,
            max_size=MAX_MESSAGE_BYTES,
            ping_interval=PING_INTERVAL,
            ping_timeout=SERVER_PING_TIMEOUT,
            close_timeout=CLOSE_TIMEOUT,
            compression=None,
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def serve_forever(self) -> None:
        assert self._server is not None
        await self._server.serve_forever()

    async def close(self) -> None:
        if self._server is None:
            return
        if self._active is not None:
            await self._active.close()
        self._server.close()
        await self._server.wait_closed()


async def serve_websocket(host_or_factory: HostLike, host: str = "127.0.0.1", port: int = 0,
                          *, token: str | None = None) -> BotServer:
    """Start serving on ``host:port``; returns once bound. ``token``: see ``BotServer``.

    Given a ``BotHost``, every client shares it; given a zero-argument factory, each client
    session gets a new host (``bot_sessions``), so no client reads what an earlier one left."""
    if hasattr(host_or_factory, "serve"):
        shared = host_or_factory
        sessions: ClientSessions[ServesChannels] = ClientSessions(lambda: shared)  # type: ignore[arg-type]
    else:
        sessions = ClientSessions(host_or_factory)  # type: ignore[arg-type]
    server = BotServer(sessions, host, token=token)
    await server.start(port)
    return server
