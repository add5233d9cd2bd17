"""Hostile stand-in endpoints on 127.0.0.1, as a site user would point the server at them: they
record exactly what the server sent (method, path, headers) and answer however a test asks,
including not like HTTP at all. Real sockets, no mocks."""
from __future__ import annotations

import asyncio
import socket
import socketserver
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import serve


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]


Answer = Callable[["Seen"], bytes | None]
"""The raw bytes sent back for one request (None: say nothing and hold the connection)."""


def http_answer(status: int, body: bytes = b"", *, content_type: str = "application/json",
                extra: str = "") -> bytes:
    head = (f"HTTP/1.1 {status} Stand-in\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n{extra}\r\n")
    return head.encode() + body


class RecordingHTTP:
    """A threaded TCP server reading one HTTP request per connection and answering ``answer``."""

    def __init__(self, answer: Answer | None = None) -> None:
        self.seen: list[Seen] = []
        self.connections = 0
        self.answer: Answer = answer or (lambda _: http_answer(401, b'{"error": "who are you"}'))
        self._lock = threading.Lock()
        self._release = threading.Event()
        stand_in = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                stand_in._serve(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _serve(self, sock: socket.socket) -> None:
        with self._lock:
            self.connections += 1
        sock.settimeout(10)
        raw = b""
        try:
            while b"\r\n\r\n" not in raw:
                chunk = sock.recv(65536)
                if not chunk:
                    return
                raw += chunk
        except OSError:
            return
        head = raw.split(b"\r\n\r\n", 1)[0].decode("latin1").split("\r\n")
        method, path = (head[0].split(" ") + ["", ""])[:2]
        headers = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        seen = Seen(method, path, headers)
        with self._lock:
            self.seen.append(seen)
        reply = self.answer(seen)
        if reply is None:
            self._release.wait(30)  # hold the connection open without a word
            return
        try:
            sock.sendall(reply)
        except OSError:
            pass

    def saw(self, text: str) -> bool:
        """Whether ``text`` appeared in any request line or header this server received."""
        with self._lock:
            return any(text in seen.path or any(text in value for value in seen.headers.values())
                       for seen in self.seen)

    def stop(self) -> None:
        self._release.set()
        self.server.shutdown()
        self.server.server_close()


@dataclass
class RecordingBot:
    """A WebSocket 'bot' on 127.0.0.1 that records each handshake's headers and then closes (or
    hands the connection to ``serve``), in a thread of its own so sync and async tests share it."""

    handler: Callable[[Any], Any] | None = None
    headers: list[dict[str, str]] = field(default_factory=list)
    port: int = 0

    def start(self) -> "RecordingBot":
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        async def main() -> None:
            async def on_connection(ws: Any) -> None:
                self.headers.append({k.lower(): v for k, v in ws.request.headers.raw_items()})
                if self.handler is not None:
                    await self.handler(ws)
                else:
                    await ws.close(1000, "recorded")

            self._stop = asyncio.Event()
            async with serve(on_connection, "127.0.0.1", 0) as server:
                self.port = server.sockets[0].getsockname()[1]
                ready.set()
                await self._stop.wait()

        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(main(),), daemon=True)
        self._thread.start()
        assert ready.wait(10), "the recording bot did not start"
        return self

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]

