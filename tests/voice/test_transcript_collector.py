"""The voice turn collector: ASR parts are joined into one user turn, and speech the ASR could not
make out still ends a turn (so the other side answers instead of waiting for the inactivity
timeout)."""
from __future__ import annotations

from pipecat.frames.frames import (
    LLMMessagesAppendFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.tests.utils import SleepFrame, run_test

from voice.bots.processors.sink import EmitSink
from voice.bots.processors.transcript_input import UNINTELLIGIBLE, TranscriptTurnCollector


def _collector() -> TranscriptTurnCollector:
    collector = TranscriptTurnCollector(EmitSink(), turn_gap_secs=0.1)
    collector._decode_allowance = 0.2  # the fallback for segments that decode to nothing
    return collector


def _turns(frames) -> list[str]:
    return [f.messages[0]["content"] for f in frames if isinstance(f, LLMMessagesAppendFrame)]


def _transcription(text: str) -> TranscriptionFrame:
    return TranscriptionFrame(text=text, user_id="", timestamp="")


async def test_parts_of_one_turn_are_joined() -> None:
    down, _ = await run_test(_collector(), frames_to_send=[
        VADUserStartedSpeakingFrame(), VADUserStoppedSpeakingFrame(), _transcription("Z K three"),
        VADUserStartedSpeakingFrame(), VADUserStoppedSpeakingFrame(), _transcription("F F W"),
        SleepFrame(sleep=0.5),
    ])
    assert _turns(down) == ["Z K three F F W"]


async def test_speech_the_asr_could_not_make_out_still_ends_a_turn() -> None:
    down, _ = await run_test(_collector(), frames_to_send=[
        VADUserStartedSpeakingFrame(), VADUserStoppedSpeakingFrame(), _transcription(""), SleepFrame(sleep=0.6),
    ])
    assert _turns(down) == [UNINTELLIGIBLE]


async def test_silence_makes_no_turn() -> None:
    down, _ = await run_test(_collector(), frames_to_send=[SleepFrame(sleep=0.5)])
    assert _turns(down) == []
