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
        # The reply is spoken before the assistant aggregator, after the emitter, appends it.
        for _ in range(250):
            history = await agent.context_history()
            if history and history[-1].get("role") == "assistant":
                break
            await asyncio.sleep(0.02)
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
    assert {t["source"] for t in tokens} == {"server"}
    assert [m["role"] for m in history] == ["system", "user", "assistant", "tool", "assistant"]


# --- malformed tool calls (issue 11 #1) -------------------------------------------------------------

import pytest  # noqa: E402

from scenarios.domains.eva_airline.tools import executor  # noqa: E402
from scoring.core.canonical import db_hash  # noqa: E402
from tests.streaming_standin import StreamingChatStandIn, Turn  # noqa: E402

_MEAL = '{"confirmation_number": "ZK3FFW", "passenger_id": "PAX001", "journey_id": "FL_SK621_20260320", "meal_type": "vegetarian"}'


def _explode(session, params):
    session.db["reservations"].clear()  # a half-done mutation that the guard must undo
    raise RuntimeError("tool blew up")


@pytest.mark.parametrize(
    ("name", "raw_arguments", "error_type"),
    [
        ("get_reservation", '["confirmation_number", "ZK3FFW"]', "invalid_parameter"),
        ("get_reservation", '[["confirmation_number", "ZK3FFW"], ["last_name", "Rodriguez"]]', "invalid_parameter"),
        ("add_meal_request", '{"confirmation_number": "ZK3FFW", "passenger_id": ', "invalid_parameter"),
        ("add_meal_request", '{"confirmation_number": "ZK3FFW", "passenger_id": ["PAX001"], "journey_id": 17, "meal_type": true}',
         "invalid_passenger_id_format"),
        ("book_spaceship", '{"destination": "MARS"}', "tool_not_found"),
        ("add_meal_request", _MEAL, "execution_error"),
    ],
    ids=["json-list", "list-of-pairs", "unparseable", "wrong-types", "unknown-tool", "handler-exception"],
)
async def test_malformed_tool_call_gets_error_result_and_conversation_goes_on(monkeypatch, name, raw_arguments, error_type):
    if error_type == "execution_error":
        monkeypatch.setitem(executor.HANDLERS, "add_meal_request", _explode)
    fake = await StreamingChatStandIn(
        [Turn(calls=[(name, raw_arguments)]), Turn(text="Sorry about that. Goodbye.", calls=[("end_conversation", "{}")])]
    ).start()
    try:
        load_all()
        scenario = resolve_scenario("1.1.2")
        agent = build_brain("agent", model="standin", llm_url=fake.base_url, api_key_name="EVASITE_UNSET_KEY")
        state = {"db": initial_db("1.1.2")}
        hash_before = db_hash(state["db"])
        await agent.configure(BrainConfig(prompt=scenario.get_agent_prompt(), tools=json.loads(scenario.get_agent_tools()),
                                          tool_domain="eva_airline", shared_state=state))
        events: list = []

        async def emit(item) -> None:
            events.append(item)

        def exited() -> bool:
            return any(isinstance(e, dict) and "<exit>" in str((e.get("data") or {}).get("text", "")) for e in events)

        await agent.start(emit)
        await agent.handle_text("Hello", kind="kickoff")
        for _ in range(250):
            if exited():
                break
            await asyncio.sleep(0.02)
        await agent.drain()
        await agent.stop()
    finally:
        await fake.stop()

    assert len(fake.requests) == 2, "the model must be invoked again after the bad call"
    tool_messages = [m for m in fake.requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 1
    result = json.loads(tool_messages[0]["content"])
    assert result["status"] == "error" and result["error_type"] == error_type
    assert db_hash(state["db"]) == hash_before
    assert not state.get("actions")
    assert exited(), "the conversation ends with the agent's end_conversation"
    called = [e["data"]["function_name"] for e in events if isinstance(e, dict) and e.get("type") == "llm-function-call"]
    assert called == [name, "end_conversation"]
    # The stand-in streams no usage (like llama.cpp's server): each response is still one call.
    entries = [t for e in events if isinstance(e, dict) and e.get("type") == "metrics" for t in e["data"]["tokens"]]
    assert entries == [{"prompt_tokens": None, "completion_tokens": None, "total_tokens": None, "source": "unknown"}] * 2


async def test_a_bot_can_only_call_the_tools_it_was_given():
    """The passenger has end_conversation only: an airline tool name is tool_not_found, not run."""
    from types import SimpleNamespace

    from voice.bots.processors.sink import EmitSink
    from voice.bots.toolbox import Toolbox

    state = {"db": initial_db("1.1.2")}
    hash_before = db_hash(state["db"])
    toolbox = Toolbox(EmitSink(pace_audio=False), lambda: state)
    toolbox.configure({"end_conversation": {}}, "eva_airline")
    results: list = []

    async def result_callback(result, *, properties=None) -> None:
        results.append(result)

    params = SimpleNamespace(function_name="cancel_reservation", tool_call_id="call_x", result_callback=result_callback,
                             arguments={"confirmation_number": "ZK3FFW", "journey_id": "FL_SK621_20260320",
                                        "cancellation_reason": "voluntary"})
    await toolbox._handle(params)
    assert results[0]["error_type"] == "tool_not_found" and "Available tools: end_conversation" in results[0]["message"]
    assert db_hash(state["db"]) == hash_before and not state.get("actions")
