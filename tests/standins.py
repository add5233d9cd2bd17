"""Local stand-ins for remote services the tests cannot reach (a real model is never reachable
from this project's machines): they speak the same protocol on 127.0.0.1."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def chat_completion(content: Any) -> bytes:
    """A non-streamed OpenAI chat-completions response body carrying ``content``."""
    return json.dumps({
        "id": "stand-in", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    }).encode()


class ChatCompletionsStandIn:
    """An OpenAI chat-completions endpoint: records every request and answers from a script of
    replies, or with ``default_content`` once the script is empty (500 when there is none)."""

    def __init__(self, default_content: str | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.replies: list[tuple[int, bytes]] = []
        self.default_content = default_content
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/chat/completions"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    def reply_content(self, content: Any) -> None:
        self.replies.append((200, chat_completion(content)))

    def start(self) -> "ChatCompletionsStandIn":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _next_reply(self) -> tuple[int, bytes]:
        if self.replies:
            return self.replies.pop(0)
        if self.default_content is not None:
            return 200, chat_completion(self.default_content)
        return 500, b"no reply scripted"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                stand_in.requests.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(raw)})
                status, body = stand_in._next_reply()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler
