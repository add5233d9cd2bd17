"""A slow OpenAI-compatible chat endpoint for fault tests: every reply streams one fixed
sentence after ``--delay`` seconds, so a text-modality scenario stays "in the middle" long enough
to kill a process. Run as ``python -m tests.slow_llm --port P --delay S`` (loopback only)."""
from __future__ import annotations

import argparse
import asyncio
import json

from aiohttp import web

REPLY = "I would like some help with my reservation, please."


def _chunk(delta: dict | None, *, finish: str | None = None, usage: dict | None = None) -> bytes:
    body: dict = {"id": "slow", "object": "chat.completion.chunk", "created": 0, "model": "slow",
                  "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        body["usage"] = usage
    return f"data: {json.dumps(body)}\n\n".encode()


def make_app(delay: float) -> web.Application:
    async def completions(request: web.Request) -> web.StreamResponse:
        await request.json()
        await asyncio.sleep(delay)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(_chunk({"role": "assistant", "content": REPLY}))
        await response.write(_chunk({}, finish="stop"))
        await response.write(_chunk(None, usage={"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def models(request: web.Request) -> web.Response:
        # At once, as real servers answer it: the run's endpoint preflight passes without the delay.
        return web.json_response({"object": "list", "data": [{"id": "slow", "object": "model"}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_get("/v1/models", models)
    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay", type=float, default=2.0)
    args = parser.parse_args()
    web.run_app(make_app(args.delay), host="127.0.0.1", port=args.port, print=None)


if __name__ == "__main__":
    main()
