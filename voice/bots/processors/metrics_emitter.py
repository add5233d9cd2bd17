"""Forward LLM token usage as RTVI ``metrics`` events (harness.md §10.1)."""
from __future__ import annotations

from pipecat.frames.frames import Frame, MetricsFrame
from pipecat.metrics.metrics import LLMUsageMetricsData
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from voice.bots.processors.sink import EmitSink
from voice.protocol import rtvi


class TokenMetricsEmitter(FrameProcessor):
    """One ``metrics`` event per LLM completion, carrying that completion's token entry.

    Why: the bridge counts agent turns from token entries, so every completion (each
    tool-calling round too) must produce exactly one entry; other metrics are not forwarded.
    """

    def __init__(self, sink: EmitSink, **kwargs) -> None:
        super().__init__(**kwargs)
        self._sink = sink

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, MetricsFrame):
            tokens = [
                {
                    "processor": item.processor,
                    "model": item.model,
                    "prompt_tokens": item.value.prompt_tokens,
                    "completion_tokens": item.value.completion_tokens,
                    "total_tokens": item.value.total_tokens,
                }
                for item in frame.data
                if isinstance(item, LLMUsageMetricsData)
            ]
            if tokens:
                self._sink.send(rtvi.metrics(tokens))
        await self.push_frame(frame, direction)
