"""Voice modality end to end: gold-replay agent and scripted passenger exchanging real audio
(Piper -> Silero VAD -> pocketsphinx) through a tiny in-test relay, for seed 1.1.2."""
from __future__ import annotations

import asyncio
import json
import time

import pytest

from scenarios.data_root import initial_db
from scenarios.registry import load_all, resolve_scenario
from scoring.canonical import db_hash
from voice.bots.brain import BrainConfig
from voice.bots.factory import build_brain
from voice.protocol.channel import AudioChunk

SILENCE = AudioChunk(bytes(3200), 16000)  # 100 ms


class AudioRelay:
    """Forwards each side's TTS audio to the other side (the brains resample), then silence."""

    def __init__(self, agent, user) -> None:
        self.brains = {"agent": agent, "user": user}
        self.events: dict[str, list] = {"agent": [], "user": []}
        self.queues = {"agent": asyncio.Queue(), "user": asyncio.Queue()}
        self.agent_exit = asyncio.Event()
        self.exit_context: list = []
        self.started = time.monotonic()

    def emitter(self, side: str):
        other = "user" if side == "agent" else "agent"

        async def emit(item) -> None:
            self.events[side].append((time.monotonic() - self.started, item))
            if isinstance(item, AudioChunk):
                self.queues[other].put_nowait(item)
            elif item.get("type") == "bot-stopped-speaking":
                for _ in range(15):
                    self.queues[other].put_nowait(SILENCE)
            elif item.get("type") == "server-message" and str(item["data"].get("text", "")).startswith("<exit>"):
                if side == "agent":
                    self.exit_context = list(self.brains["agent"].context.get_messages())
                    self.agent_exit.set()

        return emit

    async def pump(self, side: str) -> None:
        while True:
            chunk = await self.queues[side].get()
            await self.brains[side].handle_audio(chunk)

    def said(self, side: str) -> list[str]:
        return [i["data"]["text"] for _, i in self.events[side] if isinstance(i, dict) and i.get("type") == "bot-tts-text"]

    def utterance_audio(self, side: str) -> list[list[AudioChunk]]:
        """The audio chunks ``side`` sent, one list per bot-started/stopped-speaking span."""
        utterances: list[list[AudioChunk]] = []
        for _, item in self.events[side]:
            if isinstance(item, AudioChunk):
                assert utterances, "audio before bot-started-speaking"
                utterances[-1].append(item)
            elif item.get("type") == "bot-started-speaking":
                utterances.append([])
        return utterances

    def heard(self, side: str) -> list[str]:
        return [i["data"]["text"] for _, i in self.events[side] if isinstance(i, dict) and i.get("type") == "user-transcription"]


@pytest.mark.slow
async def test_voice_back_to_back_gold_replay_reaches_gold_db():
    load_all()
    scenario = resolve_scenario("1.1.2")
    options = {"modality": "voice", "pace_audio": False, "turn_gap_secs": 0.5}
    agent = build_brain("agent", model="gold-replay", **options)
    user = build_brain("user", model="scripted", **options)
    agent_state = {"db": initial_db("1.1.2")}
    for brain, prompt, tools, state in (
        (user, scenario.get_user_prompt(), scenario.get_user_tools(), {}),
        (agent, scenario.get_agent_prompt(), scenario.get_agent_tools(), agent_state),
    ):
        await brain.configure(BrainConfig(prompt=prompt, tools=json.loads(tools), tool_domain="eva_airline", shared_state=state))
    relay = AudioRelay(agent, user)
    await agent.start(relay.emitter("agent"))
    await user.start(relay.emitter("user"))
    pumps = [asyncio.create_task(relay.pump(side)) for side in ("agent", "user")]
    began = time.monotonic()
    try:
        await agent.handle_text("Hello", kind="kickoff")
        await asyncio.wait_for(relay.agent_exit.wait(), 50)
        elapsed = time.monotonic() - began
    finally:
        for task in pumps:
            task.cancel()
        await agent.stop()
        await user.stop()

    print(f"voice round trip: {elapsed:.1f}s; agent heard {relay.heard('agent')}; user heard {relay.heard('user')}")
    assert db_hash(agent_state["db"]) == db_hash(scenario.expected_scenario_db)
    assert any(m.get("role") == "tool" for m in relay.exit_context if isinstance(m, dict))
    utterances = relay.utterance_audio("agent")
    assert len(utterances) >= 3 and all(utterances)
    for chunks in utterances:
        assert all(c.sample_rate == 24000 and c.num_channels == 1 for c in chunks)
        assert all(len(c.pcm) == 4800 for c in chunks[:-1]), "100 ms chunks; only the last may be short"
        assert 0 < len(chunks[-1].pcm) <= 4800
    assert len(relay.heard("agent")) >= 3 and len(relay.heard("user")) >= 2
    kinds = [i.get("type") for _, i in relay.events["agent"] if isinstance(i, dict)]
    assert {"user-started-speaking", "user-stopped-speaking", "user-transcription", "bot-tts-text"} <= set(kinds)
    assert sum(1 for k in kinds if k == "metrics") >= 3
