"""``PipecatBrain``: the built-in bots as pipecat 1.14 pipelines behind the ``Brain`` protocol.

text:  utterance -> user aggregator -> LLM (+tools) -> token metrics -> utterance emitter -> assistant aggregator
voice: audio -> Silero VAD -> STT -> turn collector -> user aggregator -> LLM (+tools) -> token metrics
       -> TTS -> speech emitter (events + 24 kHz chunks) -> assistant aggregator
       (the agent yields to a caller who cuts in: ``YieldToCaller`` after the VAD and an
       interruptible emitter and sink; under ``barge-in`` the passenger's collector cuts in)

What must survive reconnects lives on the brain (the LLMContext, the tool map, shared_state,
the model policy); the pipeline itself is rebuilt for every connection and torn down at stop.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass
from typing import Any, Callable, Literal, Optional

from loguru import logger
from pipecat.frames.frames import InputAudioRawFrame, LLMMessagesAppendFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMAssistantAggregator,
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.services.llm_service import LLMService
from pipecat.turns.user_turn_strategies import ExternalUserTurnStrategies
from pipecat.utils.types import NOT_GIVEN
from pipecat.workers.runner import WorkerRunner

from voice.bots.brain import STOP_BUDGET_SECS, BrainConfig, Emit
from voice.bots.processors.barge_in import CutInPlan, InterruptibleSink, InterruptibleSpeechOutput, YieldToCaller
from voice.bots.processors.metrics_emitter import TokenMetricsEmitter
from voice.bots.processors.sink import EmitSink
from voice.bots.processors.speech_output import SpeechOutputEmitter
from voice.bots.processors.text_output import TextUtteranceEmitter
from voice.bots.processors.transcript_input import TURN_GAP_SECS, TranscriptTurnCollector
from voice.bots.toolbox import Toolbox
from voice.audio.pcm import resample
from voice.protocol.channel import AudioChunk
from voice.conditions.speaker import BargeInSettings
from voice.modality import Modality, check_modality

INPUT_SAMPLE_RATE = 16000
INPUT_BATCH_BYTES = 1024
"""Inbound audio enters the pipeline at least 32 ms (one Silero window) at a time. Why: every
frame is a trip through each stage's queue, and the bridge's 16 ms frames cost the loop more in
those trips than VAD and ASR cost together (bench/call_profile.py); 16 ms more latency is not heard."""
OUTPUT_SAMPLE_RATE = 24000
CONTEXT_WAIT_SECS = 3.0
CALL_SETTLE_SECS = 1.0
"""At stop, how long a just-fired tool call may take to reach the context."""
RUNNER_STOP_SECS = 5.0
"""At stop, how long the pipeline may take to cancel before its runner task is cancelled."""
assert CALL_SETTLE_SECS + RUNNER_STOP_SECS < STOP_BUDGET_SECS


@dataclass
class SpeechFactories:
    """Builders for the voice-modality services (fresh instances per pipeline)."""

    tts: Callable[[], FrameProcessor]
    stt: Callable[[], FrameProcessor]
    vad: Callable[[], FrameProcessor]


class PipecatBrain:
    """A ``Brain`` whose behaviour is a pipecat pipeline around an LLM service.

    ``llm_factory`` returns a new LLM service for each pipeline (a built-in model or
    OpenAILLMService); ``policy`` is the built-in model's decision object, kept so ``reset``
    can clear its per-conversation cache.
    """

    def __init__(
        self,
        *,
        role: Literal["agent", "user"],
        llm_factory: Callable[["PipecatBrain"], LLMService],
        modality: Modality = "text",
        speech: Optional[SpeechFactories] = None,
        policy: Any = None,
        pace_audio: Optional[bool] = None,
        turn_gap_secs: float = TURN_GAP_SECS,
        chunk_secs: float = 0.1,
        barge_in: Optional[BargeInSettings] = None,
    ) -> None:
        if role not in ("agent", "user"):
            raise ValueError(f"role must be 'agent' or 'user', not {role!r}")
        check_modality(modality)
        if modality == "voice" and speech is None:
            raise ValueError("voice modality needs speech services (tts, stt, vad)")
        self.role = role
        self.modality = modality
        self.policy = policy
        self._llm_factory = llm_factory
        self._speech = speech
        self._turn_gap = turn_gap_secs
        self._chunk_secs = chunk_secs
        if barge_in is not None and (role != "user" or modality != "voice"):
            raise ValueError("barge-in is how a voice passenger (role 'user') speaks")
        self._barge_in = barge_in
        pace = (modality == "voice") if pace_audio is None else pace_audio
        # A voice agent yields to a caller who cuts in, which needs a sink whose queue can be dropped.
        # Only with audio paced as a call: unpaced (tests, benches) there is no playout to talk over.
        self._yields = role == "agent" and modality == "voice" and pace
        self._sink = InterruptibleSink(pace_audio=pace) if self._yields else EmitSink(pace_audio=pace)
        self.shared_state: dict = {}
        self.prompt = ""
        self.context = LLMContext()
        self.toolbox = Toolbox(self._sink, lambda: self.shared_state)
        self._worker: Optional[PipelineWorker] = None
        self._runner_task: Optional[asyncio.Task] = None
        self._llm: Optional[LLMService] = None
        self._assistant: Optional[LLMAssistantAggregator] = None
        self._lock = asyncio.Lock()
        self._pending_audio = b""

    # --- Brain protocol --------------------------------------------------------------------
    async def start(self, emit: Emit) -> None:
        self._sink.attach(emit)
        if self.modality == "voice":  # ready before the caller's first audio arrives
            await self._ensure_pipeline()
        # In text the first message builds it: a setup connection, which only configures the
        # bot, then never builds one (a pipeline is most of a text scenario's CPU).

    async def stop(self) -> None:
        await self._sink.detach()
        await self._shutdown_pipeline()

    async def configure(self, config: BrainConfig) -> None:
        self.shared_state = config.shared_state
        self.prompt = config.prompt
        self.toolbox.configure(config.tools, config.tool_domain)
        self.context.set_messages([{"role": "system", "content": config.prompt}])
        schema = self.toolbox.tools_schema()
        self.context.set_tools(schema if schema is not None else NOT_GIVEN)
        if self._llm is not None:
            self.toolbox.register(self._llm)
        self._reset_policy()

    async def reset(self) -> None:
        self.toolbox.reset()
        self._reset_policy()

    async def handle_text(self, text: str, *, kind: Literal["kickoff", "utterance"]) -> None:
        worker = await self._ensure_pipeline()
        await worker.queue_frame(
            LLMMessagesAppendFrame(messages=[{"role": "user", "content": text}], run_llm=True)
        )

    async def handle_audio(self, chunk: AudioChunk) -> None:
        if self.modality != "voice":
            return
        worker = await self._ensure_pipeline()
        self._pending_audio += resample(chunk.pcm, chunk.sample_rate, INPUT_SAMPLE_RATE, num_channels=chunk.num_channels)
        if len(self._pending_audio) < INPUT_BATCH_BYTES:
            return
        pcm, self._pending_audio = self._pending_audio, b""
        await worker.queue_frame(
            InputAudioRawFrame(audio=pcm, sample_rate=INPUT_SAMPLE_RATE, num_channels=1)
        )

    async def context_history(self) -> list[dict]:
        deadline = time.monotonic() + CONTEXT_WAIT_SECS
        while self._calls_in_progress() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if self._calls_in_progress():
            logger.warning("context snapshot taken with a function call still in progress")
        return [_jsonable(m) for m in self.context.get_messages()]

    # --- helpers for tests and the host ----------------------------------------------------
    async def drain(self, timeout: float = 5.0) -> None:
        """Wait until queued events have been delivered."""
        await self._sink.drain(timeout)

    def _calls_in_progress(self) -> bool:
        return self._assistant is not None and self._assistant.has_function_calls_in_progress

    def _reset_policy(self) -> None:
        reset = getattr(self.policy, "reset", None)
        if callable(reset):
            reset()

    # --- pipeline lifecycle ----------------------------------------------------------------
    async def _ensure_pipeline(self) -> PipelineWorker:
        async with self._lock:
            if self._worker is not None and self._runner_task is not None and not self._runner_task.done():
                return self._worker
            return await self._build_pipeline()

    def _processors(self) -> list[FrameProcessor]:
        """The pipeline's processors. Run off the event loop (``_build_pipeline``): constructors
        load models and modules the first time in a process (Piper's voice ~1 s, the LLM adapter's
        openai import ~0.3 s), which would otherwise stall every call the process is serving."""
        llm = self._llm_factory(self)
        self.toolbox.register(llm)
        self._llm = llm
        pair = LLMContextAggregatorPair(
            self.context,
            user_params=LLMUserAggregatorParams(user_turn_strategies=ExternalUserTurnStrategies()),
        )
        self._assistant = pair.assistant()
        # Built-in models (those with a policy) estimate their usage; an endpoint reports its own.
        metrics = TokenMetricsEmitter(self._sink, usage_source="estimate" if self.policy is not None else "server")
        if self.modality == "text":
            return [pair.user(), llm, metrics, TextUtteranceEmitter(self._sink, self.role), pair.assistant()]
        speech = self._speech
        assert speech is not None
        hearing: list[FrameProcessor] = [speech.vad()]
        if self._yields:
            assert isinstance(self._sink, InterruptibleSink)
            output: SpeechOutputEmitter = InterruptibleSpeechOutput(
                self._sink, sample_rate=OUTPUT_SAMPLE_RATE, chunk_secs=self._chunk_secs)
            # Not while a tool call is settling: an interruption would cancel it.
            hearing.append(YieldToCaller(lambda: output.speaking() and not self._calls_in_progress()))
        else:
            output = SpeechOutputEmitter(self._sink, sample_rate=OUTPUT_SAMPLE_RATE, chunk_secs=self._chunk_secs)
        cut_in = CutInPlan(self._barge_in) if self._barge_in is not None else None
        return [
            *hearing,
            speech.stt(),
            TranscriptTurnCollector(self._sink, turn_gap_secs=self._turn_gap, cut_in=cut_in),
            pair.user(),
            llm,
            metrics,
            speech.tts(),
            output,
            pair.assistant(),
        ]

    async def _build_pipeline(self) -> PipelineWorker:
        self._pending_audio = b""  # a new connection's audio starts afresh
        processors = await asyncio.to_thread(self._processors)
        worker = PipelineWorker(
            Pipeline(processors),
            params=PipelineParams(
                audio_in_sample_rate=INPUT_SAMPLE_RATE,
                audio_out_sample_rate=OUTPUT_SAMPLE_RATE,
                enable_metrics=True,
                enable_usage_metrics=True,
                send_initial_empty_metrics=False,
            ),
            enable_rtvi=False,
            enable_turn_tracking=False,
            idle_timeout_secs=None,
            cancel_on_idle_timeout=False,
            check_dangling_tasks=False,
        )
        started = asyncio.Event()

        @worker.event_handler("on_pipeline_started")
        async def _on_started(_worker, _frame):
            started.set()

        runner = WorkerRunner(handle_sigint=False, check_dangling_tasks=False)
        await runner.add_workers(worker)
        self._worker = worker
        self._runner_task = asyncio.get_running_loop().create_task(runner.run())
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(started.wait(), timeout=10.0)
        return worker

    async def _shutdown_pipeline(self) -> None:
        async with self._lock:
            worker, task = self._worker, self._runner_task
            self._worker, self._runner_task, self._llm = None, None, None
            if worker is None or task is None:
                return
            try:
                # Let a just-fired tool call settle into the context before tearing down.
                deadline = time.monotonic() + CALL_SETTLE_SECS
                while self._calls_in_progress() and time.monotonic() < deadline:
                    await asyncio.sleep(0.02)
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(RUNNER_STOP_SECS):
                        await worker.cancel(reason="connection closed")
                        await asyncio.shield(task)
            finally:
                self._assistant = None
                # Also when this stop is itself cancelled: the runner task is no longer
                # reachable from the brain, so it must not outlive this call.
                if not task.done():
                    task.cancel()
                await asyncio.gather(task, return_exceptions=True)


def _jsonable(message: Any) -> dict:
    """A context message as plain JSON data (LLM-specific messages keep their payload)."""
    if isinstance(message, dict):
        return json.loads(json.dumps(message, default=_fallback))
    payload = getattr(message, "message", None)
    return {"llm_specific": getattr(message, "llm", None), "message": json.loads(json.dumps(payload, default=_fallback))}


def _fallback(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return "<binary>"
    return str(value)
