"""Turn and latency timing on a loaded event loop (issue 9 §4): when the rest of a caller's
utterance reaches the collector late, the turn must not split (which made the agent answer
mid-utterance), and the bridge's latency meter must not record a "handoff" off an agent frame
already in flight or off a stale user-speech time."""
from __future__ import annotations

import asyncio
import time

from pipecat.frames.frames import (
    InputAudioRawFrame,
    LLMMessagesAppendFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.tests.utils import SleepFrame, run_test

from voice.bots.processors.sink import EmitSink
from voice.bots.processors.transcript_input import TranscriptTurnCollector
from voice.bridge.latency import LatencyMeter


def quiet(secs: float) -> list[InputAudioRawFrame]:
    return [InputAudioRawFrame(audio=bytes(640), sample_rate=16000, num_channels=1) for _ in range(round(secs / 0.02))]


def heard(text: str) -> TranscriptionFrame:
    return TranscriptionFrame(text=text, user_id="", timestamp="")


def turns(frames) -> list[str]:
    return [f.messages[0]["content"] for f in frames if isinstance(f, LLMMessagesAppendFrame)]


class Collect(FrameProcessor):
    def __init__(self) -> None:
        super().__init__()
        self.frames: list = []

    async def process_frame(self, frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        self.frames.append(frame)
        await self.push_frame(frame, direction)


async def drive(collector: TranscriptTurnCollector, groups: list[list], lag: float) -> list[str]:
    """Queue ``groups`` of frames into collector -> sink, ``lag`` seconds apart, the event loop
    free meanwhile: upstream stages (VAD, STT, the bridge) running late, as on a loaded loop."""
    from pipecat.frames.frames import EndFrame
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineWorker
    from pipecat.workers.runner import WorkerRunner

    sink = Collect()
    worker = PipelineWorker(Pipeline([collector, sink]), enable_rtvi=False, idle_timeout_secs=None,
                            check_dangling_tasks=False)
    runner = WorkerRunner(handle_sigint=False, check_dangling_tasks=False)
    await runner.add_workers(worker)
    run = asyncio.create_task(runner.run())
    await asyncio.sleep(0.05)
    for index, group in enumerate(groups):
        if index:
            await asyncio.sleep(lag)
        await worker.queue_frames(group)
    await asyncio.sleep(0.3)
    await worker.queue_frame(EndFrame())
    await asyncio.wait_for(run, 10)
    return turns(sink.frames)


async def test_late_audio_does_not_split_a_turn():
    # "Z K three" is decoded, then the rest of the utterance's audio (0.2 s of pause, "F F W")
    # reaches the collector 1.2 s late: longer than the 0.45 s gap on the wall clock.
    first = [*quiet(0.2), VADUserStartedSpeakingFrame(), *quiet(0.5), VADUserStoppedSpeakingFrame(), heard("Z K three")]
    rest = [*quiet(0.2), VADUserStartedSpeakingFrame(), *quiet(0.5), VADUserStoppedSpeakingFrame(), heard("F F W"),
            *quiet(0.6)]
    assert await drive(TranscriptTurnCollector(EmitSink(), turn_gap_secs=0.45), [first, rest], lag=1.2) == ["Z K three F F W"]


async def test_a_stream_that_really_stops_still_ends_the_turn():
    collector = TranscriptTurnCollector(EmitSink(), turn_gap_secs=0.45)
    collector.STALE_AUDIO_SECS = 0.5
    first = [*quiet(0.2), VADUserStartedSpeakingFrame(), *quiet(0.5), VADUserStoppedSpeakingFrame(), heard("hello")]
    assert await drive(collector, [first, []], lag=1.5) == ["hello"]


async def test_turn_ends_after_the_gap_in_audio_time():
    down, _ = await run_test(TranscriptTurnCollector(EmitSink(), turn_gap_secs=0.45), frames_to_send=[
        VADUserStartedSpeakingFrame(), *quiet(0.3), VADUserStoppedSpeakingFrame(), heard("yes please"),
        *quiet(0.3), SleepFrame(sleep=0.1),
    ])
    assert turns(down) == [], "0.3 s of quiet audio is less than the gap"
    down, _ = await run_test(TranscriptTurnCollector(EmitSink(), turn_gap_secs=0.45), frames_to_send=[
        VADUserStartedSpeakingFrame(), *quiet(0.3), VADUserStoppedSpeakingFrame(), heard("yes please"),
        *quiet(0.5), SleepFrame(sleep=0.1),
    ])
    assert turns(down) == ["yes please"]


class Hog(FrameProcessor):
    """Blocks the event loop now and then, as five speech pipelines on two cores do."""

    async def process_frame(self, frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, InputAudioRawFrame) and id(frame) % 7 == 0:
            time.sleep(0.15)
        await self.push_frame(frame, direction)


async def test_a_loaded_loop_keeps_one_spelled_code_in_one_turn():
    pipeline_frames = []
    for part in ("Z", "K", "three", "F", "F", "W"):
        pipeline_frames += [VADUserStartedSpeakingFrame(), *quiet(0.3), VADUserStoppedSpeakingFrame(), heard(part),
                            *quiet(0.3)]
    from pipecat.pipeline.pipeline import Pipeline

    collector = TranscriptTurnCollector(EmitSink(), turn_gap_secs=0.45)
    down, _ = await run_test(Pipeline([Hog(), collector]), frames_to_send=[*pipeline_frames, *quiet(0.6), SleepFrame(sleep=0.2)])
    assert turns(down) == ["Z K three F F W"]


def test_latency_is_not_taken_off_an_agent_turn_already_in_flight():
    meter = LatencyMeter()
    meter.user_turn_started()
    meter.user_speech(10.0)
    meter.agent_turn_started()  # the agent answered the first half of a split turn
    assert meter.agent_speech(10.1) is None, "the user has not stopped yet"
    meter.user_speech(12.0)
    meter.user_turn_ended("second half", 12.6)
    assert meter.agent_speech(12.7) is None, "this frame belongs to the turn already in flight"
    meter.agent_turn_ended("first answer")
    meter.agent_turn_started()
    record = meter.agent_speech(13.5)
    assert record is not None and round(record["latency_ms"]) == 1500


def test_latency_reference_is_this_turns_speech_or_its_stop():
    meter = LatencyMeter()
    meter.user_turn_started()
    meter.user_speech(1.0)
    meter.user_turn_ended("hello", 1.6)
    meter.agent_turn_started()
    assert round(meter.agent_speech(2.0)["latency_ms"]) == 1000
    meter.agent_turn_ended("hi")
    meter.user_turn_started()  # a turn none of whose frames counted as speech
    meter.user_turn_ended("[quiet]", 30.0)
    meter.agent_turn_started()
    assert round(meter.agent_speech(30.8)["latency_ms"]) == 800, "not measured from the turn at 1.0 s"
