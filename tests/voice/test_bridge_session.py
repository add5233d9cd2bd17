"""Whole bridge sessions against the protocol double, over both transports (harness.md §9.1, §21)."""
from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from typing import Callable

import pytest

from scoring.core.canonical import db_hash
from voice.bridge.config import BridgeConfig
from voice.bridge.endpoints import PeerEndpoint
from voice.bridge.engine import SessionInputs, SessionOutcome, SessionSetupError, run_session
from voice.protocol.channel import Channel, Item
from voice.testing.double import DoubleOptions, ScriptedTool, ScriptedTurn, double_host
from voice.testing.transports import TRANSPORTS, hosted

pytestmark = pytest.mark.parametrize("transport", TRANSPORTS)

DB = {"reservations": {"ABC123": {"flight": "SK100"}}}
REBOOK = ScriptedTool("rebook_flight", {"confirmation_number": "ABC123", "new_flight": "SK703"},
                      db_patch={"reservations": {"ABC123": {"flight": "SK703"}}})
AGENT = (
    ScriptedTurn("Hello, how can I help you?"),
    ScriptedTurn("I moved you to SK703.", tools=(REBOOK,)),
    ScriptedTurn("Goodbye.", end=True),
)
USER = (ScriptedTurn("Please move me to SK703."), ScriptedTurn("Thanks, bye."))
INPUTS = SessionInputs(
    user_prompt="You are a passenger.", user_tools_json=json.dumps({"end_conversation": {}}),
    agent_prompt="You are an airline agent.", agent_tools_json=json.dumps({"rebook_flight": {}, "end_conversation": {}}),
    tool_domain="eva_airline", agent_shared_state_init={"db": DB}, user_shared_state_init={},
)


def _config(modality: str = "text", **overrides) -> BridgeConfig:
    base = dict(duration_seconds=6.0, inactivity_timeout=1.0, settle=0.2, grace=0.2, request_timeout=2.0,
                handshake_timeout=2.0, pause=0.05, kickoff_delay=0.1)
    base.update(overrides)
    return BridgeConfig(modality=modality, **base)  # type: ignore[arg-type]


async def _run(transport, agent: DoubleOptions, user: DoubleOptions, config: BridgeConfig,
               inputs: SessionInputs = INPUTS,
               wrap_agent: Callable[[PeerEndpoint], PeerEndpoint] = lambda endpoint: endpoint) -> SessionOutcome:
    events: list[dict] = []
    agent_host = double_host(replace(agent, role="agent", modality=config.modality), db_hasher=db_hash)
    user_host = double_host(replace(user, role="user", modality=config.modality), db_hasher=db_hash)
    async with hosted(agent_host, transport, label="agent") as agent_ep, hosted(user_host, transport, label="user") as user_ep:
        outcome = await asyncio.wait_for(
            run_session(scenario_inputs=inputs, agent=wrap_agent(agent_ep), user=user_ep, config=config,
                        on_event=events.append),
            timeout=config.duration_seconds + 10,
        )
    assert [e for e in events if e["type"] == "turn"] == [
        {"type": "turn", "role": t["role"], "text": t["text"], "timestamp": t["timestamp"]} for t in outcome.turns
    ]
    return outcome


async def test_scripted_conversation_ends_with_exit_and_full_summary(transport):
    outcome = await _run(transport, DoubleOptions(script=AGENT), DoubleOptions(script=USER), _config())
    assert outcome.stop_reason == "[EXIT]"
    assert outcome.end_conversation_tool_called and not outcome.simulator_end_reported
    assert [t["role"] for t in outcome.turns] == ["agent", "user", "agent", "user", "agent"]
    assert outcome.last_speaker == "agent"
    expected_db = {"reservations": {"ABC123": {"flight": "SK703"}}}
    assert outcome.merged_summary["actions"] == [{"action_type": "rebook_flight", **REBOOK.arguments}]
    assert outcome.merged_summary["db_hash"] == db_hash(expected_db)
    assert outcome.merged_summary["user_db_hash"] is None
    assert outcome.agent_final_db == expected_db
    assert outcome.token_usage["agent"]["n_calls"] == 4 and outcome.token_usage["user"]["n_calls"] == 2
    names = [c["function"]["name"] for m in outcome.agent_context for c in m.get("tool_calls", [])]
    assert names == ["rebook_flight", "end_conversation"], "the end tool's call is in the pulled context"
    assert outcome.user_context and outcome.user_context[0]["content"] == "You are a passenger."
    assert len(outcome.latencies) == 2 and all(r["latency_ms"] >= 0 for r in outcome.latencies)
    assert outcome.latencies[0]["agent_transcript"] == "I moved you to SK703."
    assert outcome.recording is None and not outcome.write_wav("/nonexistent/x.wav")
    assert "heard" not in outcome.turns[0], "only voice turns carry heard"
    assert outcome.duration_seconds > 0 and outcome.bridge_log


async def test_text_turns_keep_their_order_when_a_side_is_slow_to_say_it_stopped(transport):
    """The other side answers only once the speaker's turn is recorded, however late its
    ``bot-stopped-speaking`` follows its utterance."""
    outcome = await _run(transport, DoubleOptions(script=AGENT, stop_delay=0.3), DoubleOptions(script=USER),
                         _config())
    assert outcome.stop_reason == "[EXIT]"
    assert [t["role"] for t in outcome.turns] == ["agent", "user", "agent", "user", "agent"]
    assert [t["text"] for t in outcome.turns][:2] == ["Hello, how can I help you?", "Please move me to SK703."]


async def test_agent_that_never_speaks_gives_zero_turns(transport):
    outcome = await _run(transport, DoubleOptions(never_speak=True), DoubleOptions(script=USER), _config())
    assert outcome.stop_reason == "[INACTIVITY_TIMEOUT]"
    assert outcome.turns == [] and outcome.token_usage["agent"]["n_calls"] == 0


async def test_never_speaks_without_inactivity_timer_runs_to_timeout(transport):
    config = _config(inactivity_timeout=0, duration_seconds=1.0)
    started = time.monotonic()
    outcome = await _run(transport, DoubleOptions(never_speak=True), DoubleOptions(script=USER), config)
    assert outcome.stop_reason == "[TIMEOUT]" and outcome.turns == []
    assert time.monotonic() - started < 5


async def test_agent_that_stalls_after_one_response(transport):
    outcome = await _run(transport, DoubleOptions(script=AGENT, stall_after=1), DoubleOptions(script=USER), _config())
    assert outcome.stop_reason == "[INACTIVITY_TIMEOUT]"
    assert outcome.token_usage["agent"]["n_calls"] == 1
    assert [t["role"] for t in outcome.turns] == ["agent", "user"]
    assert outcome.last_speaker == "user"


async def test_agent_that_never_ends_goes_quiet_then_inactivity(transport):
    outcome = await _run(transport, DoubleOptions(script=AGENT, never_end=True), DoubleOptions(script=USER), _config())
    assert outcome.stop_reason == "[INACTIVITY_TIMEOUT]"
    assert not outcome.end_conversation_tool_called
    assert outcome.merged_summary["actions"], "the pull still happens"


async def test_endless_conversation_stops_at_the_duration(transport):
    agent = DoubleOptions(script=AGENT, never_end=True, repeat_last=True)
    user = DoubleOptions(script=USER, repeat_last=True)
    outcome = await _run(transport, agent, user, _config(duration_seconds=1.0))
    assert outcome.stop_reason == "[TIMEOUT]"
    assert len(outcome.turns) > 5 and not outcome.end_conversation_tool_called
    assert outcome.agent_pull_ok


@pytest.mark.parametrize("policy", ["valid-terminal-state", "tool-only"])
async def test_user_hangs_up_first(transport, policy):
    user = DoubleOptions(script=(ScriptedTurn("No thanks, bye.", end=True),))
    agent = DoubleOptions(script=(ScriptedTurn("Hello, how can I help?"), ScriptedTurn("Goodbye then.", end=True)))
    outcome = await _run(transport, agent, user, _config(conversation_end_policy=policy))
    assert outcome.simulator_end_reported
    if policy == "valid-terminal-state":
        assert outcome.stop_reason == "[SIMULATOR_EXIT]"
        assert [t["role"] for t in outcome.turns][:2] == ["agent", "user"]
    else:
        assert outcome.stop_reason == "[EXIT]", "under tool-only the conversation continues"
        assert outcome.end_conversation_tool_called
        assert [t["role"] for t in outcome.turns] == ["agent", "user", "agent"]


async def test_agent_disconnect_mid_turn_is_disconnected_and_never_hangs(transport):
    started = time.monotonic()
    outcome = await _run(transport, DoubleOptions(script=AGENT, disconnect_mid_turn=1),
                         DoubleOptions(script=USER), _config(inactivity_timeout=30, duration_seconds=30))
    assert outcome.stop_reason == "[DISCONNECTED]"
    assert time.monotonic() - started < 8
    assert [t["role"] for t in outcome.turns] == ["agent", "user"]
    assert outcome.segments[-1]["role"] == "agent", "the open agent segment is finalized"
    assert outcome.agent_context == [] and not outcome.agent_pull_ok
    assert outcome.merged_summary == {"user_db_hash": None}, "merged anyway, without an actions key (§5.8)"
    assert outcome.user_context, "the surviving side is still pulled"


async def test_user_disconnect_is_disconnected(transport):
    outcome = await _run(transport, DoubleOptions(script=AGENT), DoubleOptions(script=USER, disconnect_mid_turn=0),
                         _config(inactivity_timeout=30, duration_seconds=30))
    assert outcome.stop_reason == "[DISCONNECTED]"
    assert outcome.agent_pull_ok and outcome.user_summary is None
    assert outcome.merged_summary["actions"] == [], "the agent's own (empty) action list"


async def test_only_silence_gives_no_turns_and_inactivity(transport):
    config = _config("voice", inactivity_timeout=1.0)
    outcome = await _run(transport, DoubleOptions(only_silence=True), DoubleOptions(script=USER), config)
    assert outcome.stop_reason == "[INACTIVITY_TIMEOUT]"
    assert outcome.turns == [] and outcome.latencies == []
    assert outcome.duration_seconds >= 1.0


async def test_voice_conversation_latency_and_recording(transport, tmp_path):
    user = DoubleOptions(script=USER, interleave_silence=True)
    # The agent answers a second after the caller's last tone, so the caller's stopped-speaking
    # (sent 0.2 s after that tone) reaches the bridge first even on a loaded machine; with the
    # default 0.3 s an event-loop stall let the answer start first, and the meter then rightly
    # waited for a next agent turn that never came.
    agent = DoubleOptions(script=AGENT, end_of_speech_silence=1.0)
    outcome = await _run(transport, agent, user, _config("voice", inactivity_timeout=3.0, duration_seconds=20.0))
    assert outcome.stop_reason == "[EXIT]"
    assert len(outcome.latencies) == 2
    assert all(1000 <= r["latency_ms"] < 5000 for r in outcome.latencies)
    assert outcome.heard[0] and outcome.heard[0].startswith("[speech")
    assert outcome.turns[0]["heard"] == outcome.heard[0]
    recording = outcome.recording
    assert recording is not None and recording.sample_rate == 16000 and len(recording.left) > 16000
    assert outcome.write_wav(tmp_path / "conversation_log.wav")


async def test_rejected_prompt_is_a_setup_error(transport):
    with pytest.raises(SessionSetupError, match="update_system_prompt"):
        await _run(transport, DoubleOptions(script=AGENT), DoubleOptions(script=USER), _config(),
                   inputs=replace(INPUTS, agent_prompt=""))


async def test_a_bot_still_loading_its_models_gets_the_reset_timeout_not_the_request_timeout(transport):
    slow = DoubleOptions(script=AGENT, start_delay=1.5)  # longer than bot-ready's and the requests' waits
    config = _config(request_timeout=0.5, handshake_timeout=0.2, reset_timeout=3.0, inactivity_timeout=4.0)
    outcome = await _run(transport, slow, DoubleOptions(script=USER), config)
    assert outcome.stop_reason == "[EXIT]"
    with pytest.raises(SessionSetupError, match="reset timed out after 0.5 s"):
        await _run(transport, slow, DoubleOptions(script=USER), replace(config, reset_timeout=0.5))


async def test_failed_seeding_is_a_setup_error(transport, tmp_path, monkeypatch):
    monkeypatch.setenv("EVAL_DATA_ROOT", str(tmp_path))
    with pytest.raises(SessionSetupError, match="apply_initialization"):
        await _run(transport, DoubleOptions(script=AGENT), DoubleOptions(script=USER), _config(),
                   inputs=replace(INPUTS, agent_shared_state_init={"db_path": "missing.json"}))


async def test_first_stop_reason_wins_over_a_later_drop(transport):
    agent = DoubleOptions(script=AGENT, disconnect_after_exit=True)
    outcome = await _run(transport, agent, DoubleOptions(script=USER), _config(settle=0.5))
    assert outcome.stop_reason == "[EXIT]" and outcome.end_conversation_tool_called
    assert any("connection lost" in line for line in outcome.bridge_log), "the drop happened during the settle"


async def test_malformed_audio_mid_session_does_not_kill_the_relay(transport):
    user = DoubleOptions(script=USER, malformed_audio=True)
    config = _config("voice", inactivity_timeout=3.0)
    outcome = await _run(transport, DoubleOptions(script=AGENT), user, config)
    assert outcome.stop_reason == "[EXIT]", "the agent kept hearing the user"
    assert [t["role"] for t in outcome.turns] == ["agent", "user", "agent", "user", "agent"]
    log = "\n".join(outcome.bridge_log)
    assert "user: dropped malformed audio chunk (sample rate 0" in log
    assert "user: trimmed malformed audio chunk" in log
    assert outcome.recording is not None
    sent_seconds = len(outcome.recording.left) / 2 / outcome.recording.sample_rate
    assert sent_seconds > 0.8 * outcome.duration_seconds - 1.0, "the user->agent send loop ran to the end"


class _DeafChannel:
    """A connection whose peer stopped reading once the pulls began: sends never complete
    (a full socket buffer); what the peer already sent can still be read."""

    def __init__(self, inner: Channel) -> None:
        self._inner = inner

    @property
    def closed(self) -> bool:
        return self._inner.closed

    async def send(self, item: Item) -> None:
        if isinstance(item, dict) and item.get("type") == "client-message":
            await asyncio.Event().wait()
        await self._inner.send(item)

    async def recv(self) -> Item:
        return await self._inner.recv()

    async def close(self) -> None:
        await self._inner.close()


class _DeafOnPulls:
    def __init__(self, inner: PeerEndpoint) -> None:
        self._inner, self.label, self.in_process = inner, inner.label, inner.in_process

    async def connect(self, *, conversation: bool = False) -> Channel:
        channel = await self._inner.connect(conversation=conversation)
        return _DeafChannel(channel) if conversation else channel


async def test_agent_that_stops_reading_during_the_pulls_never_hangs(transport):
    config = _config(request_timeout=0.5)
    started = time.monotonic()
    outcome = await _run(transport, DoubleOptions(script=AGENT), DoubleOptions(script=USER), config,
                         wrap_agent=_DeafOnPulls)
    assert time.monotonic() - started < 8
    assert outcome.stop_reason == "[EXIT]"
    assert not outcome.agent_pull_ok and outcome.agent_context == []
    assert outcome.user_context, "the other side is still pulled"
    assert sum("get_context_history failed: TimeoutError" in line for line in outcome.bridge_log) == 1


async def test_failed_agent_pull_still_merges_user_actions(transport):
    note = ScriptedTool("note_request", {"topic": "rebooking"})
    user = DoubleOptions(script=(ScriptedTurn("Please move me to SK703.", tools=(note,)), ScriptedTurn("Thanks, bye.")))
    outcome = await _run(transport, DoubleOptions(script=AGENT), user, _config(request_timeout=0.5),
                         wrap_agent=_DeafOnPulls)
    assert not outcome.agent_pull_ok
    assert outcome.merged_summary == {
        "user_db_hash": None,
        "actions": [{"action_type": "note_request", "topic": "rebooking", "side": "user"}],
    }, "only the user's actions: none of the agent's were pulled"
