"""The agent yields: Piper's audio for a long read-back stops within a frame or two of the
caller starting to speak, and the speaking events say so; every voice agent is built to yield,
and only a passenger under ``barge-in`` cuts in."""
from __future__ import annotations

import asyncio
import time

from pipecat.frames.frames import EndFrame, TTSSpeakFrame, VADUserStartedSpeakingFrame
import pytest
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.workers.runner import WorkerRunner

from voice.bots.models.base import BuiltinLLMService
from voice.bots.models.null import NullPolicy
from voice.bots.pipeline import PipecatBrain, SpeechFactories
from voice.bots.processors.barge_in import InterruptibleSink, InterruptibleSpeechOutput, YieldToCaller
from voice.bots.processors.transcript_input import TranscriptTurnCollector
from voice.conditions.speaker import BargeInSettings
from voice.protocol.channel import AudioChunk
from voice.speech import registry

READ_BACK = ("All done. Your new flight is S, K, seven, zero, three, on March twenty fifth, departing at "
             "nine fifteen in the morning from Austin to Los Angeles, seat fourteen A by the window. "
             "Your confirmation number stays Z, K, three, F, F, W. Is there anything else I can help you with?")


async def _speak(interrupt_after_s: float | None) -> tuple[list[tuple[float, object]], InterruptibleSink, YieldToCaller]:
    sink = InterruptibleSink(pace_audio=True)
    heard: list[tuple[float, object]] = []

    async def emit(item: object) -> None:
        heard.append((time.monotonic(), item))

    sink.attach(emit)
    output = InterruptibleSpeechOutput(sink, sample_rate=24000, chunk_secs=0.02)
    yielder = YieldToCaller(output.speaking)
    worker = PipelineWorker(
        Pipeline([yielder, registry.make_tts("piper"), output]),
        params=PipelineParams(audio_out_sample_rate=24000), enable_rtvi=False, idle_timeout_secs=None,
        check_dangling_tasks=False,
    )
    runner = WorkerRunner(handle_sigint=False, check_dangling_tasks=False)
    await runner.add_workers(worker)
    task = asyncio.create_task(runner.run())
    await worker.queue_frame(TTSSpeakFrame(READ_BACK))
    if interrupt_after_s is not None:
        while not any(isinstance(item, AudioChunk) for _, item in heard):
            await asyncio.sleep(0.01)
        await asyncio.sleep(interrupt_after_s)
        heard.append((time.monotonic(), "caller starts"))
        await worker.queue_frame(VADUserStartedSpeakingFrame())
        await asyncio.sleep(1.0)
    else:
        # The whole read-back, however slowly it renders: on a loaded machine Piper can take over
        # pipecat's 3 s stop-frame timeout for one sentence, and the utterance then pauses (stopped,
        # started again) half-way. A read-back cut short for good fails at the deadline.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (_audio_seconds(heard) > 7.0 and _ended(heard)):
            await asyncio.sleep(0.05)
    await worker.queue_frame(EndFrame())
    await asyncio.wait_for(task, 30)
    await sink.detach()
    return heard, sink, yielder


def _ended(items: list[tuple[float, object]]) -> bool:
    """The last speaking event is bot-stopped-speaking, and no audio came after it."""
    for _, item in reversed(items):
        if isinstance(item, AudioChunk):
            return False
        if isinstance(item, dict) and item.get("type") in ("bot-started-speaking", "bot-stopped-speaking"):
            return item["type"] == "bot-stopped-speaking"
    return False


def _audio_seconds(items: list[tuple[float, object]]) -> float:
    return sum(len(item.pcm) / 2 / item.sample_rate for _, item in items if isinstance(item, AudioChunk))


async def test_agent_stops_talking_when_the_caller_cuts_in() -> None:
    heard, sink, yielder = await _speak(interrupt_after_s=1.5)
    cut = next(t for t, item in heard if item == "caller starts")
    after = [(t, item) for t, item in heard if t > cut]
    assert yielder.interruptions == 1
    # At most the chunk in flight plays after the cut (20 ms chunks; allow for a loaded loop).
    assert _audio_seconds(after) <= 0.1
    # The rest of the read-back (8-9 s of it) was never sent: dropped from the sink's queue, or
    # never rendered when the TTS was stopped first (a busy machine renders near real time).
    stopped = [t for t, item in after if isinstance(item, dict) and item.get("type") == "bot-stopped-speaking"]
    assert stopped and stopped[0] - cut < 0.3
    # Whatever had played by then (up to the 1.5 s of the cut: less when a busy machine renders
    # slower than real time) is all the caller heard of an 8-9 s read-back.
    assert 0.1 <= _audio_seconds(heard) <= 1.9


@pytest.mark.slow(seconds=20)
async def test_agent_without_interruption_says_it_all() -> None:
    heard, sink, yielder = await _speak(interrupt_after_s=None)
    assert yielder.interruptions == 0 and sink.dropped_audio_s == 0.0
    assert _audio_seconds(heard) > 7.0


class _Stage(FrameProcessor):
    """A stand-in speech service: passes frames on (the wiring, not the models, is under test)."""

    async def process_frame(self, frame, direction) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)


def _brain(role: str, **kwargs) -> PipecatBrain:
    speech = SpeechFactories(tts=_Stage, stt=_Stage, vad=_Stage)
    return PipecatBrain(role=role, llm_factory=lambda brain: BuiltinLLMService(NullPolicy()),
                        modality="voice", speech=speech, **kwargs)


def test_every_voice_agent_yields_and_only_a_barge_in_passenger_cuts_in() -> None:
    agent = _brain("agent")._processors()
    kinds = [type(p) for p in agent]
    assert kinds.index(YieldToCaller) == 1 and InterruptibleSpeechOutput in kinds  # right after the VAD
    assert not any(isinstance(p, TranscriptTurnCollector) and p._cut_in for p in agent)
    # Unpaced (tests, benches) the whole reply is sent at once: there is no playout to talk over.
    assert YieldToCaller not in [type(p) for p in _brain("agent", pace_audio=False)._processors()]

    plain = _brain("user")._processors()
    assert YieldToCaller not in [type(p) for p in plain]
    assert not any(isinstance(p, TranscriptTurnCollector) and p._cut_in for p in plain)

    settings = BargeInSettings(after_s=2.5, max_cuts=1)
    cutting = _brain("user", barge_in=settings)._processors()
    collector = next(p for p in cutting if isinstance(p, TranscriptTurnCollector))
    assert collector._cut_in is not None and collector._cut_in.settings == settings

    with pytest.raises(ValueError, match="barge-in is how a voice passenger"):
        _brain("agent", barge_in=settings)
    with pytest.raises(ValueError, match="barge-in is how a voice passenger"):
        PipecatBrain(role="user", llm_factory=lambda brain: None, modality="text", barge_in=settings)
