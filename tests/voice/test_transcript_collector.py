"""The voice turn collector: ASR parts are joined into one user turn, and speech the ASR could not
make out still ends a turn (so the other side answers instead of waiting for the inactivity
timeout)."""
from __future__ import annotations

import pytest
from pipecat.frames.frames import (
    InputAudioRawFrame,
    LLMMessagesAppendFrame,
    SystemFrame,
    TranscriptionFrame,
    TTSSpeakFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.tests.utils import SleepFrame, run_test

from voice.bots.processors.barge_in import CUT_IN, CutInPlan
from voice.bots.processors.sink import EmitSink
from voice.conditions.speaker import BargeInSettings
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


def _speech(seconds: float) -> list:
    """The other side's audio: 100 ms frames of 16 kHz silence (the VAD frames say it is speech)."""
    return [InputAudioRawFrame(audio=bytes(3200), sample_rate=16000, num_channels=1)
            for _ in range(round(seconds * 10))]


class _TranscriptionInTurn(TranscriptionFrame, SystemFrame):
    """A transcription handled in the order it was sent, among the audio and VAD frames. Why: those
    are system frames, which pipecat handles at once, while it queues a data frame behind the
    processor's work; on a loaded machine a plain transcription then arrived after the next turn
    had begun (a 50 ms pause before the quiet audio was not always enough) and the turns merged.
    In a call the other side speaks between two turns, which gives the ASR result seconds."""


def _turn(seconds: float, text: str) -> list:
    """One turn of the other side: its speech, the VAD's stop, its transcription, quiet audio."""
    return [VADUserStartedSpeakingFrame(), *_speech(seconds), VADUserStoppedSpeakingFrame(),
            _TranscriptionInTurn(text=text, user_id="", timestamp=""), *_speech(0.3)]


async def test_under_barge_in_the_passenger_cuts_into_long_turns_and_hears_the_next_one_out() -> None:
    plan = CutInPlan(BargeInSettings(after_s=2.0, max_cuts=2))
    collector = TranscriptTurnCollector(EmitSink(), turn_gap_secs=0.2, cut_in=plan)
    down, _ = await run_test(collector, frames_to_send=[
        *_turn(1.5, "How can I help?"),                 # shorter than 2 s: heard out, answered
        *_turn(5.0, "I can move you to flight"),        # cut 2 s in, dropped
        *_turn(5.0, "I can move you to flight S K seven zero three. Shall I go ahead?"),  # spared
        *_turn(5.0, "All done, your new flight"),       # cut again (the second and last cut)
        *_turn(5.0, "Is there anything else?"),         # spared
        *_turn(5.0, "Goodbye then."),                   # no cut left: heard out
    ])
    spoken = [f for f in down if isinstance(f, TTSSpeakFrame)]
    assert [f.text for f in spoken] == [CUT_IN, CUT_IN] and plan.cuts == 2
    assert not any(f.append_to_context for f in spoken)
    assert _turns(down) == ["How can I help?", "I can move you to flight S K seven zero three. Shall I go ahead?",
                            "Is there anything else?", "Goodbye then."]
    # Each cut came 2 s into its 5 s turn, not at its end.
    assert plan.cut_at_s == pytest.approx([2.0, 2.0], abs=0.11)  # within a 100 ms frame


async def test_without_barge_in_long_turns_are_heard_out() -> None:
    down, _ = await run_test(_collector(), frames_to_send=[*_turn(6.0, "A long read-back."), SleepFrame(sleep=0.3)])
    assert _turns(down) == ["A long read-back."] and not any(isinstance(f, TTSSpeakFrame) for f in down)


async def test_a_cut_turn_ends_when_its_speaker_stops_even_before_it_is_decoded() -> None:
    """Under load the cut segment's transcript can come after the agent's next turn has begun:
    that next turn is still heard (and answered), and the late transcript is not."""
    plan = CutInPlan(BargeInSettings(after_s=1.0, max_cuts=3))
    collector = TranscriptTurnCollector(EmitSink(), turn_gap_secs=0.2, cut_in=plan)
    down, _ = await run_test(collector, frames_to_send=[
        VADUserStartedSpeakingFrame(), *_speech(2.0), VADUserStoppedSpeakingFrame(),  # the greeting, cut
        VADUserStartedSpeakingFrame(), *_speech(3.0), VADUserStoppedSpeakingFrame(),  # the next turn
        _transcription("Thank you for calling"), _transcription("May I have your confirmation number?"),
        SleepFrame(sleep=0.05), *_speech(0.3),
    ])
    assert plan.cut_at_s == pytest.approx([1.0], abs=0.11)
    assert _turns(down) == ["May I have your confirmation number?"]
