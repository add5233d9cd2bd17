"""Pure bridge bookkeeping: joining rule, segments, latency, jitter buffer, merge (§6-§8, §5.8)."""
from __future__ import annotations

import numpy as np

from voice.audio.pcm import Recording, is_speech, resample, rms, usable_chunk
from voice.bridge.conversation import ConversationState
from voice.bridge.relay import JitterBuffer
from voice.bridge.summary import merge_summaries, parse_context
from voice.bridge.timeline import SpeechTimeline
from voice.bridge.transcript import Transcript, join_text
from voice.protocol import rtvi
from voice.protocol.channel import AudioChunk

TONE = (8000 * np.sin(np.arange(1600) / 5)).astype("<i2").tobytes()
SILENCE = bytes(3200)


def test_joining_rule_inserts_one_space_only_between_non_whitespace():
    assert join_text("Hello", "world") == "Hello world"
    assert join_text("Hello ", "world") == "Hello world"
    assert join_text("Hello", " world") == "Hello world"
    assert join_text("", "Hi") == "Hi"
    assert join_text("Sentence one.", "Sentence two.") == "Sentence one. Sentence two."


def test_segments_and_turns():
    transcript = Transcript()
    transcript.stopped("agent", 0.5)  # nothing open: nothing happens
    transcript.started("agent", 1.0)
    transcript.add_text("agent", "Hi")
    transcript.add_text("agent", "there")
    transcript.started("agent", 2.0)  # reopened: the first becomes a segment only
    transcript.stopped("agent", 3.0)  # empty -> [INTERRUPTED]
    transcript.started("user", 3.5)
    transcript.add_text("user", "  bye  ")
    transcript.started("agent", 4.0)
    transcript.finalize_open(5.0)
    assert [s["text"] for s in transcript.segments] == ["Hi there", "[INTERRUPTED]", "bye", "[INTERRUPTED]"]
    assert [(t["role"], t["text"]) for t in transcript.turns] == [("agent", "[INTERRUPTED]")]
    assert transcript.last_speaker == "agent"


def _user_turn_with_interleaved_silence(state: ConversationState) -> None:
    state.on_message("user", rtvi.bot_started_speaking(), 1.0)
    state.on_message("user", rtvi.bot_tts_text("I need help"), 1.0)
    for t, pcm in [(1.1, TONE), (1.2, SILENCE), (1.3, TONE), (1.4, SILENCE), (1.5, SILENCE)]:
        state.on_audio("user", AudioChunk(pcm, 24000), t)
    state.on_message("user", rtvi.bot_stopped_speaking(), 2.0)


def test_voice_latency_reference_is_the_last_speech_frame():
    state = ConversationState(modality="voice")
    _user_turn_with_interleaved_silence(state)
    state.on_audio("agent", AudioChunk(SILENCE, 24000), 2.2)  # silence does not end the wait
    state.on_message("agent", rtvi.bot_started_speaking(), 2.3)
    state.on_audio("agent", AudioChunk(TONE, 24000), 2.5)
    state.on_audio("agent", AudioChunk(TONE, 24000), 2.6)  # only the first speech frame counts
    state.on_message("agent", rtvi.bot_tts_text("Sure"), 2.6)
    state.on_message("agent", rtvi.bot_stopped_speaking(), 3.0)
    assert len(state.latency.records) == 1
    record = state.latency.records[0]
    assert abs(record["latency_ms"] - 1200.0) < 1e-6  # 2.5 - 1.3, not 2.5 - 2.0
    assert record == {"user_transcript": "I need help", "agent_transcript": "Sure", "latency_ms": record["latency_ms"]}


def test_silence_never_counts_as_activity():
    state = ConversationState(modality="voice")
    state.on_audio("user", AudioChunk(SILENCE, 24000), 5.0)
    state.on_message("agent", rtvi.metrics_tokens(1, 2), 6.0)
    assert state.last_activity == 0.0
    state.on_audio("agent", AudioChunk(TONE, 24000), 7.0)
    assert state.last_activity == 7.0


def test_text_latency_from_user_stop_to_agent_start():
    state = ConversationState(modality="text")
    state.on_message("user", rtvi.bot_started_speaking(), 1.0)
    state.on_message("user", rtvi.bot_stopped_speaking(), 1.5)
    state.on_message("agent", rtvi.bot_started_speaking(), 1.75)
    assert abs(state.latency.records[0]["latency_ms"] - 250.0) < 1e-6
    assert state.latency.records[0]["user_transcript"] == "[INTERRUPTED]"


def test_token_usage_exit_and_final_response():
    state = ConversationState(modality="text")
    state.on_message("agent", rtvi.metrics_tokens(10, 2), 0.1)
    state.on_message("agent", {"type": "metrics", "data": {"tokens": [{"completion_tokens": 3}, {"value": {"prompt_tokens": 4}}]}}, 0.2)
    assert state.token_usage["agent"] == {"n_calls": 3, "prompt": 14, "completion": 5, "source": "server",
                                          "calls_without_usage": 0}
    assert state.on_message("user", rtvi.server_message({"text": "<final_response>{}</final_response>"}), 0.3) is None
    assert state.final_responses == ["{}"]
    assert state.on_message("user", rtvi.server_message({"text": "see <exit>x</exit>"}), 0.4) is None
    assert state.on_message("user", rtvi.exit_message(), 0.5) == "user"


def test_token_usage_marks_estimates_and_responses_without_usage():
    state = ConversationState(modality="text")
    estimate = {"type": "metrics", "data": {"tokens": [{"prompt_tokens": 7, "completion_tokens": 2, "source": "estimate"}]}}
    unknown = {"type": "metrics", "data": {"tokens": [{"prompt_tokens": None, "completion_tokens": None, "source": "unknown"}]}}
    state.on_message("agent", estimate, 0.1)
    state.on_message("agent", estimate, 0.2)
    assert state.token_usage["agent"] == {"n_calls": 2, "prompt": 14, "completion": 4, "source": "estimate",
                                          "calls_without_usage": 0}
    state.on_message("user", unknown, 0.3)
    state.on_message("user", unknown, 0.4)
    assert state.token_usage["user"] == {"n_calls": 2, "prompt": None, "completion": None, "source": "unknown",
                                         "calls_without_usage": 2}, "calls counted, tokens not invented"
    state.on_message("user", rtvi.metrics_tokens(5, 1), 0.5)
    assert state.token_usage["user"] == {"n_calls": 3, "prompt": 5, "completion": 1, "source": "mixed",
                                         "calls_without_usage": 2}


def test_heard_text_is_attached_to_the_turn_it_belongs_to():
    state = ConversationState(modality="voice")
    state.on_message("agent", rtvi.bot_started_speaking(), 0.0)
    state.on_message("agent", rtvi.bot_tts_text("Your code is ABC"), 0.1)
    state.on_message("user", rtvi.user_transcription("your code", final=True), 0.5)
    state.on_message("agent", rtvi.bot_stopped_speaking(), 1.0)
    state.on_message("user", rtvi.user_transcription("is a b c", final=True), 1.2)
    state.on_message("user", rtvi.user_transcription("ignored partial", final=False), 1.3)
    state.on_message("user", rtvi.bot_started_speaking(), 1.5)
    state.on_message("user", rtvi.user_transcription("late", final=True), 1.6)
    state.on_message("user", rtvi.bot_stopped_speaking(), 2.0)
    assert state.heard == ["your code is a b c", None]
    assert [turn["heard"] for turn in state.transcript.turns] == ["your code is a b c", None]


def test_jitter_buffer_waits_for_five_frames_and_never_emits_a_partial_frame():
    buffer = JitterBuffer(frame_bytes=4)
    buffer.push(b"\x01" * 18)  # 4.5 frames: not ready
    assert buffer.pop() == (bytes(4), False)
    buffer.push(b"\x01" * 2)  # 5 frames
    assert [buffer.pop()[1] for _ in range(5)] == [True] * 5
    assert buffer.pop() == (bytes(4), False)


def test_resample_and_speech_classification():
    assert resample(TONE, 24000, 24000) is TONE
    down = resample(TONE, 24000, 16000)
    assert abs(len(down) // 2 - 1600 * 2 / 3) <= 1
    assert is_speech(down, 200) and not is_speech(SILENCE, 200)


def test_resample_down_mixes_interleaved_channels_and_ignores_a_partial_sample():
    mono = np.frombuffer(TONE, dtype="<i2")
    stereo = np.stack([mono, np.zeros_like(mono)], axis=1).astype("<i2").tobytes()
    mixed = resample(stereo + b"\x01", 24000, 24000, num_channels=2)
    assert np.array_equal(np.frombuffer(mixed, dtype="<i2"), np.round(mono / 2).astype("<i2"))
    assert abs(len(resample(stereo, 24000, 16000, num_channels=2)) // 2 - 1600 * 2 / 3) <= 1
    assert resample(TONE + b"\x01", 24000, 16000) == resample(TONE, 24000, 16000)
    assert rms(TONE + b"\x01") == rms(TONE)


def test_usable_chunk_drops_impossible_rates_and_trims_partial_samples():
    for rate in (0, -16000, 7999, 96001):
        assert usable_chunk(AudioChunk(TONE, rate)) == (None, f"sample rate {rate} outside 8000-96000 Hz")
    assert usable_chunk(AudioChunk(TONE, 24000, num_channels=0))[0] is None
    good = AudioChunk(TONE, 24000)
    assert usable_chunk(good) == (good, None)
    trimmed, problem = usable_chunk(AudioChunk(TONE + b"\x01", 24000))
    assert trimmed == good and problem == "3201 bytes is not whole samples"
    trimmed, _ = usable_chunk(AudioChunk(TONE + b"\x01\x02", 24000, num_channels=2))
    assert trimmed is not None and len(trimmed.pcm) == len(TONE)


def test_recording_pads_the_shorter_channel(tmp_path):
    recording = Recording(left=b"\x01\x00\x02\x00", right=b"\x03\x00", sample_rate=16000)
    assert recording.interleaved() == b"\x01\x00\x03\x00\x02\x00\x00\x00"
    recording.write_wav(tmp_path / "x.wav")
    assert (tmp_path / "x.wav").stat().st_size == 44 + 8


def test_merge_summaries_and_context_parsing():
    agent = {"actions": [{"action_type": "a"}], "db_hash": "h", "db": {}}
    user = {"actions": [{"action_type": "u", "side": "x"}], "db_hash": None}
    merged = merge_summaries(agent, user)
    assert merged["actions"] == [{"action_type": "a"}, {"action_type": "u", "side": "user"}]
    assert merged["user_db_hash"] is None and "user_db" not in merged
    assert merge_summaries({}, None) == {"user_db_hash": None}
    # A failed agent pull: the merge still happens, and "actions" holds only the user's.
    assert merge_summaries(None, {"actions": [], "db_hash": "u"}) == {"user_db_hash": "u"}
    assert merge_summaries(None, user) == {"user_db_hash": None, "actions": [{"action_type": "u", "side": "user"}]}
    assert parse_context({"context": "[1]"}) == [1]
    assert parse_context({"context": "[{'a': 1}]"}) == []
    assert parse_context(None) == []


def test_request_ids_are_unique():
    ids = {rtvi.client_message("reset", side="agent")["id"] for _ in range(50)}
    assert len(ids) == 50 and all(i.startswith("reset_agent_") for i in ids)


def test_speech_timeline_segments_frames_with_short_pauses_bridged():
    timeline = SpeechTimeline(frame_seconds=0.016, threshold=200.0)  # a 200 ms pause is 13 frames
    loud, quiet = TONE[:512], SILENCE[:512]
    layout = [(quiet, 10), (loud, 20), (quiet, 12), (loud, 10), (quiet, 13), (loud, 3), (quiet, 2)]
    flags = [timeline.add(pcm) for pcm, count in layout for _ in range(count)]
    assert flags.count(True) == 33
    assert timeline.frame_segments() == [(10, 52), (65, 68)], "12 quiet frames stay inside, 13 end a segment"
    assert timeline.segments(0.5) == [[0.66, 1.332], [1.54, 1.588]]
    assert not timeline.add(TONE[:512], audible=False), "filler silence from the jitter buffer"
    assert SpeechTimeline(frame_seconds=0.016, threshold=200.0).segments(0.0) == []
