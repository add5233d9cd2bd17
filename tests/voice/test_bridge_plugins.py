"""What plugs into the bridge engine from outside, through real sessions: a human tester's peer
role, a tap, per-direction audio conditions, and the speech timeline measured on real speech
(espeak-ng words) placed at known times."""
from __future__ import annotations

import asyncio
import functools
import io
import subprocess
import wave
from typing import Literal

import numpy as np
import pytest

from scoring.core.canonical import db_hash
from tests.voice.listen_helpers import tone
from tests.voice.test_bridge_session import AGENT, INPUTS, _config
from voice.audio.pcm import resample
from voice.bridge.config import BridgeConfig
from voice.bridge.engine import ConditionError, SessionOutcome, run_session
from voice.bots.brain import BrainConfig, Emit
from voice.bots.host import BotHost
from voice.human.peer import HumanPeer
from voice.protocol.channel import AudioChunk
from voice.testing.double import DoubleOptions, ScriptedTurn, double_host
from voice.testing.transports import TRANSPORTS, hosted

FRAME = 0.016
FRAME_SAMPLES = 256  # 16 ms at the bots' 16 kHz input rate
TOLERANCE = 2 * FRAME + 0.003
"""Onsets and offsets of real speech cross the RMS threshold within two frames of the samples'
own extent."""
USER_GAP, AGENT_GAP = 0.6, 0.5


# --- real speech ---------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def spoken(word: str, rate: int) -> np.ndarray:
    """``word`` said by espeak-ng (deterministic), at ``rate``, trimmed to where it is audible."""
    wav = subprocess.run(["espeak-ng", "--stdout", word], check=True, capture_output=True, timeout=30).stdout
    with wave.open(io.BytesIO(wav)) as reader:
        source_rate = reader.getframerate()
        pcm = reader.readframes(10 ** 9)
    samples = np.frombuffer(resample(pcm, source_rate, rate), dtype="<i2")
    loud = np.nonzero(np.abs(samples) >= 1000)[0]
    return samples[loud[0]: loud[-1] + 1]


def placed(words: tuple[str, str], gap: float, rate: int) -> tuple[bytes, list[list[float]]]:
    """The two words with ``gap`` seconds of silence between them, and where each one is."""
    first, second = spoken(words[0], rate), spoken(words[1], rate)
    silence = np.zeros(round(gap * rate), dtype="<i2")
    clip = np.concatenate([first, silence, second]).astype("<i2")
    first_end = first.size / rate
    return clip.tobytes(), [[0.0, first_end], [first_end + gap, clip.size / rate]]


USER_WORDS, AGENT_WORDS = ("confirmation", "Rodriguez"), ("booked", "goodbye")


class ClipBrain:
    """A bot that says one clip, as a single chunk, on its cue (the agent: the kickoff; the
    passenger: the first audio it hears), and keeps every sample it heard."""

    modality = "voice"

    def __init__(self, clip: bytes, rate: int, *, cue: Literal["kickoff", "audio"]) -> None:
        self.clip, self.rate, self.cue = clip, rate, cue
        self.heard = bytearray()
        self.heard_rates: set[int] = set()
        self._emit: Emit | None = None
        self._played = False

    async def start(self, emit: Emit) -> None:
        self._emit = emit

    async def stop(self) -> None:
        self._emit = None

    async def configure(self, config: BrainConfig) -> None:
        return None

    async def reset(self) -> None:
        return None

    async def handle_text(self, text: str, *, kind: Literal["kickoff", "utterance"]) -> None:
        if kind == "kickoff" and self.cue == "kickoff":
            await self._play()

    async def handle_audio(self, chunk: AudioChunk) -> None:
        self.heard += chunk.pcm
        self.heard_rates.add(chunk.sample_rate)
        if self.cue == "audio":
            await self._play()

    async def context_history(self) -> list[dict]:
        return []

    async def _play(self) -> None:
        if not self._played and self._emit is not None:
            self._played = True
            await self._emit(AudioChunk(self.clip, self.rate))


class Inverted:
    """A test condition: every sample's sign flipped, unmistakably changed yet as loud."""

    def __init__(self) -> None:
        self.rates: set[int] = set()

    def process(self, pcm: bytes, sample_rate: int) -> bytes:
        self.rates.add(sample_rate)
        return (-np.frombuffer(pcm, dtype="<i2")).astype("<i2").tobytes()


class Silenced:
    """A test condition: the line goes dead."""

    def process(self, pcm: bytes, sample_rate: int) -> bytes:
        return bytes(len(pcm))


class Truncating:
    """A broken condition: it drops samples, against the contract."""

    def process(self, pcm: bytes, sample_rate: int) -> bytes:
        return pcm[: len(pcm) // 2]


class RecordingTap:
    """A tap that keeps every relayed chunk per destination."""

    def __init__(self) -> None:
        self.heard: dict[str, bytearray] = {"agent": bytearray(), "user": bytearray()}

    def relayed(self, dest_side: str, chunk: AudioChunk) -> None:
        self.heard[dest_side] += chunk.pcm


def _voice_config(**overrides) -> BridgeConfig:
    # Inactivity counts from a clip's arrival, which precedes its playing out by its length.
    return _config("voice", **{"inactivity_timeout": 3.5, "duration_seconds": 12.0, **overrides})


async def _clip_session(transport: str, *, conditions=None, tap=None,
                        ) -> tuple[SessionOutcome, ClipBrain, ClipBrain, list[list[float]], list[list[float]]]:
    user_clip, user_layout = placed(USER_WORDS, USER_GAP, 24000)
    agent_clip, agent_layout = placed(AGENT_WORDS, AGENT_GAP, 16000)
    user_brain = ClipBrain(user_clip, 24000, cue="audio")
    agent_brain = ClipBrain(agent_clip, 16000, cue="kickoff")
    config = _voice_config()
    async with hosted(BotHost(agent_brain), transport, label="agent") as agent_ep, \
            hosted(BotHost(user_brain), transport, label="user") as user_ep:
        outcome = await asyncio.wait_for(
            run_session(scenario_inputs=INPUTS, agent=agent_ep, user=user_ep, config=config,
                        conditions=conditions, tap=tap),
            timeout=config.duration_seconds + 10,
        )
    return outcome, agent_brain, user_brain, user_layout, agent_layout


def _channel(outcome: SessionOutcome, hearer: str) -> np.ndarray:
    assert outcome.recording is not None and outcome.recording.sample_rate == 16000
    return np.frombuffer(outcome.recording.left if hearer == "agent" else outcome.recording.right, dtype="<i2")


def _whole_frames(clip: np.ndarray) -> np.ndarray:
    """What the relay sends of a clip: its whole frames (a partial frame waits in the jitter
    buffer for more audio, §6.2)."""
    return clip[: clip.size // FRAME_SAMPLES * FRAME_SAMPLES]


def _frame_positions(channel: np.ndarray, clip: np.ndarray) -> list[int]:
    """The frames at which ``clip``'s whole frames start, sample for sample, in ``channel``."""
    clip = _whole_frames(clip)
    return [k for k in range(0, channel.size - clip.size + 1, FRAME_SAMPLES)
            if np.array_equal(channel[k: k + clip.size], clip)]


# --- audio conditions -----------------------------------------------------------------------------

@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("hearer", ["agent", "user"])
async def test_a_condition_changes_only_what_its_side_hears_and_the_recording_keeps_it(transport, hearer):
    condition, tap = Inverted(), RecordingTap()
    outcome, agent_brain, user_brain, _, _ = await _clip_session(transport, conditions={hearer: condition}, tap=tap)
    assert outcome.stop_reason == "[INACTIVITY_TIMEOUT]"
    assert condition.rates == {16000}, "applied at the hearing side's input rate"
    said_to = {  # what each side's counterpart said, as the relay delivers it at 16 kHz
        "agent": np.frombuffer(resample(user_brain.clip, 24000, 16000), dtype="<i2"),
        "user": np.frombuffer(agent_brain.clip, dtype="<i2"),
    }
    brains = {"agent": agent_brain, "user": user_brain}
    for side, said in said_to.items():
        channel = _channel(outcome, side)
        flipped = (-said).astype("<i2")
        expected, clean = (flipped, said) if side == hearer else (said, flipped)
        positions = _frame_positions(channel, expected)
        assert len(positions) == 1, "sent once: the condition's output to its side, the clean audio to the other"
        assert _frame_positions(channel, clean) == []
        heard = bytes(brains[side].heard)
        assert brains[side].heard_rates == {16000}
        assert channel.tobytes().startswith(heard), "the recording holds what the side was sent, in order"
        assert len(heard) >= 2 * (positions[0] + _whole_frames(expected).size), "... and heard the whole clip"
        assert bytes(tap.heard[side]) == channel.tobytes(), "a tap hears what the side heard"


async def test_without_conditions_each_side_hears_the_relayed_audio_untouched():
    outcome, agent_brain, user_brain, _, _ = await _clip_session("inproc")
    assert len(_frame_positions(_channel(outcome, "agent"), np.frombuffer(
        resample(user_brain.clip, 24000, 16000), dtype="<i2"))) == 1
    assert len(_frame_positions(_channel(outcome, "user"), np.frombuffer(agent_brain.clip, dtype="<i2"))) == 1


async def test_a_dead_line_to_the_agent_leaves_the_speakers_timeline_intact():
    outcome, agent_brain, _, user_layout, _ = await _clip_session("inproc", conditions={"agent": Silenced()})
    assert not _channel(outcome, "agent").any() and not any(agent_brain.heard), "the agent heard nothing"
    assert _channel(outcome, "user").any()
    assert len(outcome.speech_timeline["user"]) == len(user_layout), "the passenger still spoke"


async def test_a_condition_that_breaks_the_contract_fails_the_session():
    with pytest.raises(ConditionError, match="Truncating returned 256 bytes for a frame of 512"):
        await _clip_session("inproc", conditions={"user": Truncating()})


async def test_conditions_are_refused_where_they_cannot_apply():
    agent = double_host(DoubleOptions(role="agent", script=AGENT), db_hasher=db_hash)
    async with hosted(agent, "inproc", label="agent") as agent_ep:
        with pytest.raises(ValueError, match="voice modality"):
            await run_session(scenario_inputs=INPUTS, agent=agent_ep, user=None, config=_config("text"),
                              conditions={"agent": Inverted()})
        with pytest.raises(ValueError, match="unknown sides"):
            await run_session(scenario_inputs=INPUTS, agent=agent_ep, user=None, config=_voice_config(),
                              conditions={"caller": Inverted()})


# --- the speech timeline --------------------------------------------------------------------------

def _assert_layout(segments: list[list[float]], layout: list[list[float]]) -> None:
    """``segments`` are ``layout`` shifted by when the clip arrived, within ``TOLERANCE``."""
    assert len(segments) == len(layout), segments
    shift = segments[0][0] - layout[0][0]
    for (start, end), (expected_start, expected_end) in zip(segments, layout):
        assert abs(start - (expected_start + shift)) <= TOLERANCE, (segments, layout)
        assert abs(end - (expected_end + shift)) <= TOLERANCE, (segments, layout)


def _first_speech_time(channel: np.ndarray, offset: float, threshold: float = 200.0) -> float:
    frames = channel[: channel.size // FRAME_SAMPLES * FRAME_SAMPLES].reshape(-1, FRAME_SAMPLES).astype(np.float64)
    loud = np.nonzero(np.sqrt((frames ** 2).mean(axis=1)) >= threshold)[0]
    return offset + loud[0] * FRAME


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_timeline_places_known_speech_at_its_times(transport):
    outcome, _, _, user_layout, agent_layout = await _clip_session(transport)
    timeline, offset = outcome.speech_timeline, outcome.recording_offset
    assert set(timeline) == {"agent", "user"}
    assert offset is not None and 0 < offset < outcome.duration_seconds, "the relays start after the connections"
    _assert_layout(timeline["user"], user_layout)
    _assert_layout(timeline["agent"], agent_layout)  # "booked"'s 32 ms dips are inside a word
    for segments in timeline.values():
        flat = [t for segment in segments for t in segment]
        assert flat == sorted(flat) and all(end > start for start, end in segments), "sorted, not overlapping"
    # Audio time since the conversation start: the recording (same clock) puts speech there too.
    assert abs(_first_speech_time(_channel(outcome, "agent"), offset) - timeline["user"][0][0]) < 2e-4
    assert abs(_first_speech_time(_channel(outcome, "user"), offset) - timeline["agent"][0][0]) < 2e-4


async def test_text_sessions_have_no_timeline():
    agent = double_host(DoubleOptions(role="agent", script=AGENT), db_hasher=db_hash)
    user = double_host(DoubleOptions(role="user", script=(ScriptedTurn("Bye.", end=True),)), db_hasher=db_hash)
    async with hosted(agent, "inproc", label="agent") as agent_ep, hosted(user, "inproc", label="user") as user_ep:
        outcome = await run_session(scenario_inputs=INPUTS, agent=agent_ep, user=user_ep,
                                    config=_config("text", conversation_end_policy="valid-terminal-state"))
    assert outcome.stop_reason == "[SIMULATOR_EXIT]"
    assert outcome.speech_timeline is None and outcome.recording_offset is None


# --- a human tester's role --------------------------------------------------------------------------

async def _turn_event(events: asyncio.Queue, role: str) -> dict:
    while True:
        event = await asyncio.wait_for(events.get(), 15)
        if event["type"] == "turn" and event["role"] == role:
            return event


async def _human_session(peer: HumanPeer, modality: str, drive) -> SessionOutcome:
    events: asyncio.Queue = asyncio.Queue()
    script = (ScriptedTurn("Hello, how can I help?"), ScriptedTurn("I moved you to SK703."),
              ScriptedTurn("Goodbye.", end=True))
    agent = double_host(DoubleOptions(role="agent", modality=modality, script=script), db_hasher=db_hash)
    config = _config(modality, conversation_end_policy="tool-only", inactivity_timeout=0, duration_seconds=20.0)
    async with hosted(agent, "inproc", label="agent") as agent_ep:
        session = asyncio.create_task(run_session(scenario_inputs=INPUTS, agent=agent_ep, user=peer,
                                                  config=config, on_event=events.put_nowait))
        try:
            await drive(events)
            return await asyncio.wait_for(session, 15)
        finally:
            session.cancel()
            await peer.aclose()


def _assert_human_outcome(outcome: SessionOutcome) -> None:
    assert outcome.stop_reason == "[SIMULATOR_EXIT]", "a tester's hang-up ends the call even under tool-only"
    assert outcome.simulator_end_reported and not outcome.end_conversation_tool_called
    assert [t["role"] for t in outcome.turns] == ["agent", "user", "agent"]
    assert outcome.user_context is None and outcome.user_summary is None, "a person is never pulled"
    assert not any("user: setup connection" in line for line in outcome.bridge_log), "nor set up"
    assert outcome.agent_pull_ok


async def test_a_typing_tester_plugs_in_through_its_role():
    peer = HumanPeer(modality="text")

    async def drive(events: asyncio.Queue) -> None:
        await _turn_event(events, "agent")
        assert peer.say("Please move me to SK703.") is None
        await _turn_event(events, "agent")
        peer.hang_up()

    outcome = await _human_session(peer, "text", drive)
    _assert_human_outcome(outcome)
    assert outcome.turns[1]["text"] == "Please move me to SK703."


async def test_a_speaking_testers_turns_come_from_the_agents_events():
    peer = HumanPeer(modality="voice")
    microphone = tone(1000, 48000, 0.6)

    async def drive(events: asyncio.Queue) -> None:
        await _turn_event(events, "agent")
        for start in range(0, len(microphone), 1920):  # 20 ms browser frames
            peer.push_audio(microphone[start:start + 1920], 48000)
        user_turn = await _turn_event(events, "user")
        assert user_turn["text"].startswith("[speech "), "the words the agent's ASR reported"
        await _turn_event(events, "agent")
        peer.hang_up()

    outcome = await _human_session(peer, "voice", drive)
    _assert_human_outcome(outcome)
    assert "heard" not in outcome.turns[1], "the tester's turn is what the agent heard: no separate heard text"
    assert outcome.turns[0].get("heard") is None, "a browser reports no transcription of the agent"
    user_speech = outcome.speech_timeline["user"]
    assert len(user_speech) == 1 and abs((user_speech[0][1] - user_speech[0][0]) - 0.6) <= TOLERANCE, \
        "the microphone's 0.6 s of tone, as relayed to the agent"
