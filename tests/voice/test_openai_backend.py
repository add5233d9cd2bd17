"""The agent brain against a real local OpenAI-compatible streaming server (function calling)."""
from __future__ import annotations

import asyncio
import json

from aiohttp import web

from scenarios.data_root import initial_db
from scenarios.registry import load_all, resolve_scenario
from voice.bots.brain import BrainConfig
from voice.bots.factory import build_brain


def _chunk(delta: dict, *, finish: str | None = None, usage: dict | None = None) -> bytes:
    body = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if delta is not None else [],
    }
    if usage is not None:
        body["usage"] = usage
    return f"data: {json.dumps(body)}\n\n".encode()


class FakeOpenAI:
    """Round 1 answers with a streamed get_reservation tool call, round 2 with text."""

    def __init__(self) -> None:
        self.requests: list[dict] = []

    async def completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        usage = {"prompt_tokens": 120 + len(self.requests), "completion_tokens": 9, "total_tokens": 130}
        if len(self.requests) == 1:
            call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_reservation", "arguments": ""}}
            await response.write(_chunk({"role": "assistant", "tool_calls": [call]}))
            for part in ('{"confirmation_number": ', '"ZK3FFW", "last_name": ', '"Rodriguez"}'):
                await response.write(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}))
            await response.write(_chunk({}, finish="tool_calls"))
        else:
            for part in ("Your reservation ", "is confirmed."):
                await response.write(_chunk({"content": part}))
            await response.write(_chunk({}, finish="stop"))
        await response.write(_chunk(None, usage=usage))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


async def test_openai_backend_calls_tools_through_local_server():
    fake = FakeOpenAI()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", fake.completions)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    try:
        load_all()
        scenario = resolve_scenario("1.1.2")
        agent = build_brain("agent", model="test-model", llm_url=f"http://127.0.0.1:{port}/v1", api_key_name="EVASITE_UNSET_KEY")
        state = {"db": initial_db("1.1.2")}
        await agent.configure(
            BrainConfig(
                prompt=scenario.get_agent_prompt(),
                tools=json.loads(scenario.get_agent_tools()),
                tool_domain="eva_airline",
                shared_state=state,
            )
        )
        events: list = []

        async def emit(item) -> None:
            events.append(item)

        await agent.start(emit)
        await agent.handle_text("My code is Z K three F F W, last name Rodriguez.", kind="utterance")
        for _ in range(200):
            if any(isinstance(e, dict) and e.get("type") == "utterance" for e in events):
                break
            await asyncio.sleep(0.02)
        await agent.drain()
        history = await agent.context_history()
        await agent.stop()
    finally:
        await runner.cleanup()

    assert len(fake.requests) == 2
    first, second = fake.requests
    assert first["model"] == "test-model" and first["stream"] is True
    names = {tool["function"]["name"] for tool in first["tools"]}
    assert {"get_reservation", "rebook_flight", "end_conversation"} <= names and len(names) == 16
    roles = [m["role"] for m in second["messages"]]
    assert roles[:2] == ["system", "user"] and "tool" in roles
    tool_message = next(m for m in second["messages"] if m["role"] == "tool")
    assert tool_message["tool_call_id"] == "call_1"
    assert json.loads(tool_message["content"])["status"] == "success"
    calls = [e["data"] for e in events if isinstance(e, dict) and e.get("type") == "llm-function-call"]
    assert calls == [{"function_name": "get_reservation", "tool_call_id": "call_1", "args": {"confirmation_number": "ZK3FFW", "last_name": "Rodriguez"}}]
    said = [e["data"]["text"] for e in events if isinstance(e, dict) and e.get("type") == "utterance"]
    assert said == ["Your reservation is confirmed."]
    tokens = [e["data"]["tokens"][0] for e in events if isinstance(e, dict) and e.get("type") == "metrics"]
    assert [t["prompt_tokens"] for t in tokens] == [121, 122]
    assert [m["role"] for m in history] == ["system", "user", "assistant", "tool", "assistant"]
