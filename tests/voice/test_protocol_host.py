"""The bot side of the wire protocol (harness.md §5), against both transports."""
from __future__ import annotations

import json

import pytest

from scoring.core.canonical import db_hash
from voice.bots.host import RTVI_KEY, TOOL_DOMAIN_KEY, BotHost
from voice.bridge.requests import RequestError, handshake, request, wait_for
from voice.protocol import rtvi
from voice.protocol.channel import ConnectionClosed
from voice.testing.double import DoubleOptions, ScriptedTurn, double_host
from voice.testing.transports import TRANSPORTS, hosted

pytestmark = pytest.mark.parametrize("transport", TRANSPORTS)
TIMEOUT = 3.0


def _host() -> BotHost:
    return double_host(DoubleOptions(script=(ScriptedTurn("Hello."),)), db_hasher=db_hash)


async def _ask(channel, name, args=None):
    return await request(channel, name, args or {}, side="agent", timeout=TIMEOUT)


async def _prompted(channel, **extra):
    args = {"prompt": "You are a test bot.", "tools": json.dumps({"end_conversation": {}}),
            "add_suffix": False, "tool_domain": "eva_airline", **extra}
    return await _ask(channel, "update_system_prompt", args)


async def test_handshake_answers_bot_ready(transport):
    async with hosted(_host(), transport) as endpoint:
        channel = await endpoint.connect()
        assert await handshake(channel, TIMEOUT) is True
        await channel.close()


async def test_update_system_prompt_semantics(transport):
    host = _host()
    state = host.shared_state
    state["stale"] = True
    async with hosted(host, transport) as endpoint:
        channel = await endpoint.connect()
        assert await _ask(channel, "update_system_prompt", {"prompt": ""}) is False
        assert state == {"stale": True}, "an empty prompt changes nothing"
        assert await _prompted(channel) is True
        assert host.shared_state is state, "cleared in place, same object"
        assert "stale" not in state
        assert state[TOOL_DOMAIN_KEY] == "eva_airline"
        assert hasattr(state[RTVI_KEY], "push_server_message")
        assert host.tools == {"end_conversation": {}}
        assert host.brain.prompt == "You are a test bot."
        assert await _ask(channel, "update_system_prompt", {"prompt": "x", "tools": "not json"}) is False
        await channel.close()


async def test_apply_initialization_semantics(transport, tmp_path, monkeypatch):
    (tmp_path / "db.json").write_text(json.dumps({"flights": {"SK1": {}}}))
    monkeypatch.setenv("EVAL_DATA_ROOT", str(tmp_path))
    host = _host()
    async with hosted(host, transport) as endpoint:
        channel = await endpoint.connect()
        await _prompted(channel)
        bad = await _ask(channel, "apply_initialization", {"shared_state_init": "{nope"})
        assert bad["success"] is False and bad["errors"]
        assert (await _ask(channel, "apply_initialization", {"shared_state_init": "[1]"}))["success"] is False
        ok = await _ask(channel, "apply_initialization", {"domain": "eva_airline", "shared_state_init": '{"db_path": "db.json"}', "actions": []})
        assert ok == {"success": True, "errors": []}
        assert host.shared_state["db"] == {"flights": {"SK1": {}}} and "db_path" not in host.shared_state
        assert RTVI_KEY in host.shared_state, "runtime entries survive the merge"
        missing = await _ask(channel, "apply_initialization", {"shared_state_init": '{"db_path": "nope.json", "db": null}'})
        assert missing["success"] is True, "db present (even null): db_path is dropped"
        unknown = await _ask(channel, "apply_initialization", {"shared_state_init": '{"db": {"a": 1}}', "actions": [{"func_name": "nope"}]})
        assert unknown["success"] is False and "nope" in unknown["errors"][0]
        await channel.close()


async def test_apply_initialization_missing_db_file_fails(transport, tmp_path, monkeypatch):
    monkeypatch.setenv("EVAL_DATA_ROOT", str(tmp_path))
    async with hosted(_host(), transport) as endpoint:
        channel = await endpoint.connect()
        await _prompted(channel)
        result = await _ask(channel, "apply_initialization", {"shared_state_init": '{"db_path": "absent.json"}'})
        assert result["success"] is False
        await channel.close()


async def test_db_path_outside_the_data_root_is_refused(transport, tmp_path, monkeypatch):
    root = tmp_path / "root"
    root.mkdir()
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"password": "hunter2"}))
    (root / "link.json").symlink_to(secret)
    monkeypatch.setenv("EVAL_DATA_ROOT", str(root))
    host = _host()
    async with hosted(host, transport) as endpoint:
        channel = await endpoint.connect()
        await _prompted(channel)
        for db_path in (str(secret), "../secret.json", "sub/../../secret.json", "link.json", ""):
            init = json.dumps({"db_path": db_path})
            result = await _ask(channel, "apply_initialization", {"shared_state_init": init})
            assert result["success"] is False, db_path
            assert "inside the evaluation data root" in result["errors"][0]
            summary = await _ask(channel, "get_scenario_summary", {"include_db": True})
            assert "hunter2" not in json.dumps(summary)
        await channel.close()


async def test_bot_ready_states_the_modality(transport):
    for modality in ("text", "voice"):
        async with hosted(double_host(DoubleOptions(modality=modality)), transport) as endpoint:
            channel = await endpoint.connect()
            await channel.send(rtvi.client_ready())
            ready = await wait_for(channel, lambda item: isinstance(item, dict) and item.get("type") == "bot-ready", TIMEOUT)
            assert rtvi.stated_modality(ready) == modality
            await channel.close()


async def test_summary_context_and_sync_delta(transport):
    host = _host()
    async with hosted(host, transport) as endpoint:
        channel = await endpoint.connect()
        await _prompted(channel)
        empty = await _ask(channel, "get_scenario_summary")
        assert empty == {"actions": [], "db_hash": None}
        db = {"reservations": {"ABC123": {"status": "confirmed"}}}
        await _ask(channel, "apply_initialization", {"shared_state_init": json.dumps({"db": db})})
        host.shared_state.setdefault("actions", []).append({"action_type": "x"})
        summary = await _ask(channel, "get_scenario_summary", {"include_db": True})
        assert summary["db_hash"] == db_hash(db)
        assert summary["actions"] == [{"action_type": "x"}]
        assert summary["db"] == db
        assert "db" not in await _ask(channel, "get_scenario_summary", {"include_db": False})
        context = await _ask(channel, "get_context_history")
        assert json.loads(context["context"])[0] == {"role": "system", "content": "You are a test bot."}
        assert await _ask(channel, "apply_sync_delta", {"domain": "eva_airline", "delta": {}}) == {"success": True, "errors": []}
        await channel.close()


async def test_unknown_request_is_an_error_response_and_connection_survives(transport):
    async with hosted(_host(), transport) as endpoint:
        channel = await endpoint.connect()
        with pytest.raises(RequestError, match=r"^\w+: .*frobnicate"):
            await _ask(channel, "frobnicate")
        assert await _ask(channel, "reset") is True
        await channel.close()


async def test_handler_exception_never_kills_the_connection(transport):
    host = _host()

    async def broken() -> list:
        raise RuntimeError("boom")

    host.brain.context_history = broken  # type: ignore[method-assign]
    async with hosted(host, transport) as endpoint:
        channel = await endpoint.connect()
        assert await _ask(channel, "get_context_history") == {"context": "[]"}
        assert await _ask(channel, "reset") is True
        await channel.close()


async def test_raising_handler_is_an_error_response_and_connection_survives(transport):
    host = _host()

    async def broken(args: dict) -> dict:
        raise RuntimeError("boom")

    host._handlers["get_scenario_summary"] = broken  # every real handler catches its own errors
    async with hosted(host, transport) as endpoint:
        channel = await endpoint.connect()
        with pytest.raises(RequestError, match=r"^RuntimeError: boom$"):
            await _ask(channel, "get_scenario_summary")
        assert await _ask(channel, "reset") is True
        await channel.close()


async def test_context_history_replaces_inline_media(transport):
    host = _host()
    tool_result = {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"data": "kept"})}
    messages = [
        {"role": "user", "content": [
            {"type": "input_audio", "input_audio": {"data": "UklGRiQAAABXQVZF", "format": "wav"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "text", "text": "my code is ABC123"},
        ]},
        {"role": "assistant", "audio": {"id": "a1", "data": "AAAA", "transcript": "hello"}},
        {"role": "user", "content": [{"type": "file", "file": {"file_data": "JVBERi0=", "filename": "t.pdf"}}]},
        tool_result,
    ]

    async def history() -> list:
        return messages

    host.brain.context_history = history  # type: ignore[method-assign]
    async with hosted(host, transport) as endpoint:
        channel = await endpoint.connect()
        context = json.loads((await _ask(channel, "get_context_history"))["context"])
        await channel.close()
    audio, image, text = context[0]["content"]
    assert audio["input_audio"] == {"data": "<audio>", "format": "wav"}
    assert image["image_url"] == {"url": "<image>"} and text["text"] == "my code is ABC123"
    assert context[1]["audio"] == {"id": "a1", "data": "<audio>", "transcript": "hello"}
    assert context[2]["content"][0]["file"] == {"file_data": "<file>", "filename": "t.pdf"}
    assert context[3] == tool_result, "tool results are kept intact"


async def test_apply_initialization_is_matched_by_id_after_a_stray_response(transport):
    async with hosted(_host(), transport) as endpoint:
        channel = await endpoint.connect()
        stray = rtvi.client_message("update_system_prompt", {"prompt": "p", "tools": "{}"}, side="agent")
        await channel.send(stray)  # its response arrives first and must be skipped
        result = await _ask(channel, "apply_initialization", {"shared_state_init": '{"db": {"a": 1}}'})
        assert result == {"success": True, "errors": []}
        await channel.close()


async def test_shared_state_survives_reconnect(transport):
    host = _host()
    async with hosted(host, transport) as endpoint:
        setup = await endpoint.connect()
        await _prompted(setup)
        await _ask(setup, "apply_initialization", {"shared_state_init": '{"db": {"a": 1}}'})
        await setup.close()
        conversation = await endpoint.connect(conversation=True)
        assert await handshake(conversation, TIMEOUT)
        summary = await _ask(conversation, "get_scenario_summary")
        assert summary["db_hash"] == db_hash({"a": 1})
        await conversation.close()


async def test_kickoff_makes_the_double_speak(transport):
    async with hosted(_host(), transport) as endpoint:
        channel = await endpoint.connect(conversation=True)
        await _prompted(channel)
        await channel.send(rtvi.send_text("Hello"))
        said = await wait_for(channel, lambda item: isinstance(item, dict) and item.get("type") == "bot-tts-text", TIMEOUT)
        assert said["data"]["text"] == "Hello."
        await channel.close()


async def test_peer_close_is_seen_as_connection_closed(transport):
    host = _host()
    async with hosted(host, transport) as endpoint:
        channel = await endpoint.connect()
        assert await handshake(channel, TIMEOUT)
        await host.drop_connection()
        with pytest.raises(ConnectionClosed):
            await wait_for(channel, lambda item: False, TIMEOUT)
