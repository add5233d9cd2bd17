"""Run pipecat speech services in a tiny pipeline and collect what they produce."""
from __future__ import annotations

import asyncio
from collections.abc import Callable

from pipecat.frames.frames import EndFrame, Frame, TTSAudioRawFrame, TTSSpeakFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.workers.runner import WorkerRunner


class AudioCollector(FrameProcessor):
    def __init__(self) -> None:
        super().__init__()
        self.pcm = bytearray()
        self.rate = 0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TTSAudioRawFrame):
            self.pcm += frame.audio
            self.rate = frame.sample_rate
        await self.push_frame(frame, direction)


async def synthesize(service, text: str, sample_rate: int = 24000) -> tuple[bytes, int]:
    """Speak ``text`` through a TTS service; returns (s16le mono pcm, rate)."""
    collector = AudioCollector()
    worker = PipelineWorker(
        Pipeline([service, collector]),
        params=PipelineParams(audio_out_sample_rate=sample_rate),
        enable_rtvi=False,
        idle_timeout_secs=None,
        check_dangling_tasks=False,
    )
    runner = WorkerRunner(handle_sigint=False, check_dangling_tasks=False)
    await runner.add_workers(worker)
    await worker.queue_frames([TTSSpeakFrame(text), EndFrame()])
    await asyncio.wait_for(runner.run(), 60)
    return bytes(collector.pcm), collector.rate



async def heard_right_clip(line: str, heard_right: Callable[[str], bool], *, tries: int = 10) -> tuple[bytes, int, str]:
    """A Piper rendering of ``line`` that Whisper tiny.en (the default recogniser) hears right,
    with its transcript. Piper samples each rendering anew and some are misheard, so a test that
    feeds speech to an agent feeds a checked clip: it tests the call, not one lucky recognition."""
    from voice.audio.pcm import resample
    from voice.speech import whisper_models
    from voice.speech.piper_tts import make_piper_tts
    from voice.speech.whisper_stt import shared_model, transcribe_pcm

    model = shared_model(whisper_models.tiny_en())
    heard: list[str] = []
    for _ in range(tries):
        pcm, rate = await synthesize(make_piper_tts(), line)
        text = await asyncio.to_thread(transcribe_pcm, model, resample(pcm, rate, 16000))
        if heard_right(text):
            return pcm, rate, text
        heard.append(text)
    raise AssertionError(f"none of {tries} renderings of {line!r} was heard right: {heard}")
