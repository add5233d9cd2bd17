"""Voice modality: VAD events and ASR results -> user events and one context turn."""
from __future__ import annotations

import asyncio
from typing import Optional

from pipecat.frames.frames import (
    CancelFrame,
    EndFrame,
    Frame,
    LLMMessagesAppendFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from voice.bots.processors.sink import EmitSink
from voice.protocol import rtvi


UNINTELLIGIBLE = "[unintelligible]"


class TranscriptTurnCollector(FrameProcessor):
    """Reports what the bot heard and hands finished turns to the LLM.

    Why: the VAD splits one spoken turn at every pause (a spelled code has many), while the
    built-in models advance by turn count; so transcripts are joined until the other side has
    been quiet for ``turn_gap_secs`` and only then appended to the context as one user message.
    Each ASR result is still reported at once as a final ``user-transcription``. Speech that the
    ASR could not make out still ends a turn, as ``UNINTELLIGIBLE``: a caller who said something
    gets an answer (a request to repeat, say) instead of silence until the inactivity timeout.
    """

    def __init__(self, sink: EmitSink, *, turn_gap_secs: float = 1.0, **kwargs) -> None:
        super().__init__(**kwargs)
        self._sink = sink
        self._gap = turn_gap_secs
        self._parts: list[str] = []
        self._speaking = False
        self._heard_speech = False
        self._pending_segments = 0
        self._timer: Optional[asyncio.Task] = None

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, VADUserStartedSpeakingFrame):
            self._speaking = True
            self._heard_speech = True
            await self._cancel_timer()
            self._sink.send(rtvi.user_started_speaking())
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            self._speaking = False
            self._pending_segments += 1
            self._sink.send(rtvi.user_stopped_speaking())
            # The segment's transcript is still being decoded; this is only the fallback for a
            # segment that decodes to nothing.
            await self._arm_timer(self._gap + self._decode_allowance)
        elif isinstance(frame, TranscriptionFrame):
            # One transcription per decoded segment (an empty one when nothing was recognised);
            # the turn may only end once every segment of it has been decoded.
            self._pending_segments = max(0, self._pending_segments - 1)
            text = frame.text.strip()
            if text:
                self._sink.send(rtvi.user_transcription(text, final=True))
                self._parts.append(text)
            if not self._speaking and self._pending_segments == 0 and self._parts:
                await self._arm_timer(self._gap)
            return  # the context gets the joined turn instead
        elif isinstance(frame, (EndFrame, CancelFrame)):
            await self._cancel_timer()
        await self.push_frame(frame, direction)

    _decode_allowance = 3.0

    async def _arm_timer(self, delay: float) -> None:
        await self._cancel_timer()
        self._timer = self.create_task(self._finish_turn_later(delay))

    async def _cancel_timer(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None and not timer.done() and timer is not asyncio.current_task():
            await self.cancel_task(timer)

    async def _finish_turn_later(self, delay: float) -> None:
        await asyncio.sleep(delay)
        self._pending_segments = 0
        if self._speaking or not (self._parts or self._heard_speech):
            return
        text = " ".join(self._parts) or UNINTELLIGIBLE
        self._parts = []
        self._heard_speech = False
        await self.push_frame(
            LLMMessagesAppendFrame(messages=[{"role": "user", "content": text}], run_llm=True)
        )
