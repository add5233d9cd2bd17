"""Text modality: turn each LLM response into one spoken-utterance event group."""
from __future__ import annotations

from pipecat.frames.frames import (
    Frame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from voice.bots.processors.sink import EmitSink
from voice.protocol import rtvi


class TextUtteranceEmitter(FrameProcessor):
    """Collects the LLM text of one response and emits it as a finished utterance.

    Why: in text modality there is no TTS, yet the bridge still needs bot-started-speaking,
    bot-tts-text (the whole utterance) and bot-stopped-speaking around each utterance, plus the
    ``utterance`` message the other side consumes (harness.md §6.7). Frames pass through
    unchanged so the assistant aggregator still writes the context.
    """

    def __init__(self, sink: EmitSink, role: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self._sink = sink
        self._role = role
        self._parts: list[str] = []

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction == FrameDirection.DOWNSTREAM:
            if isinstance(frame, LLMFullResponseStartFrame):
                self._parts = []
            elif isinstance(frame, LLMTextFrame):
                self._parts.append(frame.text)
            elif isinstance(frame, LLMFullResponseEndFrame):
                self._flush()
        await self.push_frame(frame, direction)

    def _flush(self) -> None:
        text = "".join(self._parts).strip()
        self._parts = []
        if not text:
            return
        self._sink.send(rtvi.bot_started_speaking())
        self._sink.send(rtvi.bot_tts_text(text))
        self._sink.send(rtvi.utterance(self._role, text))
        self._sink.send(rtvi.bot_stopped_speaking())
