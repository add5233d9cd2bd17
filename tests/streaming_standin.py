"""A local OpenAI-compatible *streaming* chat endpoint (aiohttp, 127.0.0.1, port 0).

It answers each POST with the next scripted turn: streamed text, or streamed tool calls whose
argument text is sent verbatim (so a test can stream malformed calls the way a weak model does),
with or without a ``usage`` chunk. ``GET /v1/models`` answers like a real server, which is what
the runner's reachability check asks for.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Turn:
    """One scripted response: ``text`` and/or ``calls`` as ``(name, raw argument text)``."""

    text: str = ""
    calls: list[tuple[str, str]] = field(default_factory=list)
    usage: dict | None = None


def _chunk(delta: dict | None, *, finish: str | None = None, usage: dict | None = None) -> bytes:
    body: dict[str, Any] = {
        "id": "chatcmpl-standin", "object": "chat.completion.chunk", "created": 0, "model": "standin",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if delta is not None else [],
    }
    if usage is not None:
        body["usage"] = usage
    return f"data: {json.dumps(body)}\n\n".encode()


class StreamingChatStandIn:
    """Records every request body; replies from ``turns``, then with ``default`` forever."""

    def __init__(self, turns: list[Turn], default: Turn | None = None, *, models_status: int = 200) -> None:
        self.turns = list(turns)
        self.default = default or Turn(text="Goodbye.")
        self.requests: list[dict] = []
        self.models_status = models_status
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self) -> "StreamingChatStandIn":
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _models(self, request: web.Request) -> web.Response:
        if self.models_status != 200:
            return web.json_response({"error": "refused"}, status=self.models_status)
        return web.json_response({"object": "list", "data": [{"id": "standin", "object": "model"}]})

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(await request.json())
        turn = self.turns.pop(0) if self.turns else self.default
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(_chunk({"role": "assistant", "content": ""}))
        if turn.text:
            await response.write(_chunk({"content": turn.text}))
        for index, (name, raw) in enumerate(turn.calls):
            head = {"index": index, "id": f"call_{len(self.requests)}_{index}", "type": "function",
                    "function": {"name": name, "arguments": ""}}
            await response.write(_chunk({"tool_calls": [head]}))
            # Arguments arrive in two fragments, as real servers stream them.
            for part in (raw[: len(raw) // 2], raw[len(raw) // 2:]):
                if part:
                    await response.write(_chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]}))
        await response.write(_chunk({}, finish="tool_calls" if turn.calls else "stop"))
        if turn.usage is not None:
            await response.write(_chunk(None, usage=turn.usage))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response
