"""Built-in bots in text modality, driven directly through the Brain protocol."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.data_root import initial_db
from scenarios.registry import load_all, resolve_scenario
from scoring.core.canonical import db_hash
from voice.bots.brain import BrainConfig
from voice.bots.factory import build_brain

REPO = Path(__file__).resolve().parents[2]


def _is_exit(item) -> bool:
    if not isinstance(item, dict) or item.get("type") != "server-message":
        return False
    text = (item.get("data") or {}).get("text", "")
    return text.startswith("<exit>") and text.endswith("</exit>")


class Relay:
    """Wires two text-modality brains back to back the way the bridge forwards utterances."""

    def __init__(self, agent, user) -> None:
        self.agent, self.user = agent, user
        self.events: dict[str, list] = {"agent": [], "user": []}
        self.exit_context: dict[str, list] = {}
        self.agent_exit = asyncio.Event()
        self.tasks: list[asyncio.Task] = []

    def emitter(self, side: str):
        other = self.user if side == "agent" else self.agent
        brain = self.agent if side == "agent" else self.user

        async def emit(item) -> None:
            self.events[side].append(item)
            if isinstance(item, dict) and item.get("type") == "utterance":
                text = item["data"]["text"]
                self.tasks.append(asyncio.create_task(other.handle_text(text, kind="utterance")))
            if _is_exit(item):
                self.exit_context[side] = list(brain.context.get_messages())
                if side == "agent":
                    self.agent_exit.set()

        return emit


async def _configure(brain, prompt: str, tools_json: str, state: dict) -> None:
    await brain.reset()
    await brain.configure(
        BrainConfig(prompt=prompt, tools=json.loads(tools_json), tool_domain="eva_airline", shared_state=state)
    )


async def _run_pair(agent, user, scenario, agent_state, user_state, timeout=20.0) -> Relay:
    await _configure(user, scenario.get_user_prompt(), scenario.get_user_tools(), user_state)
    await _configure(agent, scenario.get_agent_prompt(), scenario.get_agent_tools(), agent_state)
    relay = Relay(agent, user)
    await agent.start(relay.emitter("agent"))
    await user.start(relay.emitter("user"))
    try:
        await agent.handle_text("Hello", kind="kickoff")
        await asyncio.wait_for(relay.agent_exit.wait(), timeout)
        await asyncio.sleep(0.3)
    finally:
        await agent.stop()
        await user.stop()
        for task in relay.tasks:
            task.cancel()
    return relay


def _tool_results(messages: list, name: str) -> list[dict]:
    ids = {
        call["id"]
        for m in messages
        if isinstance(m, dict)
        for call in (m.get("tool_calls") or [])
        if call["function"]["name"] == name
    }
    return [m for m in messages if isinstance(m, dict) and m.get("role") == "tool" and m.get("tool_call_id") in ids]


def _metrics(events: list) -> list[dict]:
    return [e for e in events if isinstance(e, dict) and e.get("type") == "metrics"]


@pytest.fixture(scope="module")
def seed_112():
    load_all()
    return resolve_scenario("1.1.2")


async def test_gold_replay_against_scripted_passenger_reaches_gold_db(seed_112):
    agent = build_brain("agent", model="gold-replay")
    user = build_brain("user", model="scripted")
    agent_state = {"db": initial_db("1.1.2")}
    relay = await _run_pair(agent, user, seed_112, agent_state, {})

    assert db_hash(agent_state["db"]) == db_hash(seed_112.expected_scenario_db)
    assert agent_state["actions"], "write tools must record actions"
    # The exit tag went out only after the end_conversation result was in the context.
    results = _tool_results(relay.exit_context["agent"], "end_conversation")
    assert results and results[0]["content"] != "IN_PROGRESS"
    agent_metrics = _metrics(relay.events["agent"])
    assert len(agent_metrics) >= 3
    for event in agent_metrics:
        entry = event["data"]["tokens"][0]
        assert entry["prompt_tokens"] > 0 and entry["completion_tokens"] > 0
    kinds = [e.get("type") for e in relay.events["agent"] if isinstance(e, dict)]
    assert kinds.count("bot-started-speaking") == kinds.count("bot-stopped-speaking") >= 3
    assert "llm-function-call" in kinds
    applied = [e for e in relay.events["agent"] if isinstance(e, dict) and (e.get("data") or {}).get("type") == "action-applied"]
    assert applied and applied[0]["data"]["tool_domain"] == "eva_airline"
    # The passenger spoke its opener, spelled its code, and hung up with its own tool.
    said = [e["data"]["text"] for e in relay.events["user"] if isinstance(e, dict) and e.get("type") == "utterance"]
    assert said[0] == "Hi, I need to change my flight to March twenty-fifth."
    assert "Z, K, three, F, F, W" in said[1] and "ZK3FFW" not in said[1]
    assert any(_is_exit(e) for e in relay.events["user"])
    # Context history is JSON-able and holds the tool calls and results.
    history = await agent.context_history()
    json.dumps(history)
    assert history[0]["role"] == "system"
    assert _tool_results(history, "rebook_flight")


async def test_null_agent_ends_on_third_response(seed_112):
    agent = build_brain("agent", model="null")
    user = build_brain("user", model="scripted")
    agent_state = {"db": initial_db("1.1.2")}
    relay = await _run_pair(agent, user, seed_112, agent_state, {})
    said = [e["data"]["text"] for e in relay.events["agent"] if isinstance(e, dict) and e.get("type") == "utterance"]
    assert len(said) == 3
    assert len(_metrics(relay.events["agent"])) == 3
    assert db_hash(agent_state["db"]) == db_hash(initial_db("1.1.2"))
    assert agent_state.get("actions", []) == []


async def test_state_survives_reconnect(seed_112):
    """Prompt, tools and context persist across connections (setup, then conversation)."""
    agent = build_brain("agent", model="gold-replay")
    events: list = []

    async def emit(item) -> None:
        events.append(item)

    await agent.start(emit)
    await _configure(agent, seed_112.get_agent_prompt(), seed_112.get_agent_tools(), {"db": initial_db("1.1.2")})
    assert agent._runner_task is None  # a text setup connection only configures: no pipeline is built
    await agent.stop()
    await agent.start(emit)
    await agent.handle_text("Hello", kind="kickoff")
    assert agent._runner_task is not None  # the first message builds it
    for _ in range(100):
        if any(isinstance(e, dict) and e.get("type") == "utterance" for e in events):
            break
        await asyncio.sleep(0.02)
    await agent.stop()
    history = await agent.context_history()
    assert [m["role"] for m in history] == ["system", "user", "assistant"]
    assert "get_reservation" in agent.toolbox.names and len(agent.toolbox.names) == 16


def test_factory_rejects_unknown_model_and_remote_without_key(monkeypatch):
    with pytest.raises(ValueError, match="unknown agent model"):
        build_brain("agent", model="gpt-nonexistent")
    with pytest.raises(ValueError, match="unknown user model"):
        build_brain("user", model="gold-replay")
    monkeypatch.delenv("EVASITE_TEST_KEY", raising=False)
    with pytest.raises(ValueError, match="EVASITE_TEST_KEY"):
        build_brain("agent", model="m", llm_url="https://llm.example.com/v1", api_key_name="EVASITE_TEST_KEY")
    assert build_brain("agent", model="m", llm_url="http://127.0.0.1:9/v1", api_key_name="EVASITE_TEST_KEY")


async def test_a_cancelled_stop_never_orphans_the_pipeline_runner(monkeypatch):
    brain = build_brain("agent", model="null")

    async def emit(item) -> None:
        pass

    await brain.start(emit)
    await brain.handle_text("Hello", kind="kickoff")  # a text bot builds its pipeline for its first message
    runner = brain._runner_task
    assert runner is not None and not runner.done()
    # A tool call still settling keeps stop() waiting (up to a second) before the teardown.
    monkeypatch.setattr(brain, "_calls_in_progress", lambda: True)
    stop = asyncio.create_task(brain.stop())
    await asyncio.sleep(0.2)
    stop.cancel()  # e.g. the host's own stop grace ran out
    await asyncio.gather(stop, return_exceptions=True)
    try:
        assert runner.done(), "the runner task is cancelled and awaited, not left running"
    finally:
        runner.cancel()


def test_a_built_in_model_runs_without_the_openai_package():
    """Pipecat gives a service the OpenAI adapter unless it names its own; its import (the openai
    package) cost each process about 0.45 s that a built-in model never used. A fresh process, so
    that nothing imported earlier hides it."""
    code = """
import asyncio, sys, django
django.setup()
from voice.bots.factory import build_brain

async def main():
    brain, said = build_brain("agent", model="null"), asyncio.Event()
    async def emit(item):
        if isinstance(item, dict) and item.get("type") == "utterance":
            said.set()
    await brain.start(emit)
    await brain.handle_text("Hello", kind="kickoff")
    await asyncio.wait_for(said.wait(), 60)
    print(type(brain._llm.get_llm_adapter()).__name__)
    await brain.stop()

asyncio.run(main())
print(sum(name.split(".")[0] == "openai" for name in sys.modules), "openai modules")
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-2:] == ["PolicyAdapter", "0 openai modules"], done.stdout
