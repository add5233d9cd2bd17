"""Forward LLM token usage as RTVI ``metrics`` events (harness.md §10.1)."""
from __future__ import annotations

from dataclasses import dataclass

from pipecat.frames.frames import Frame, MetricsFrame, SystemFrame
from pipecat.metrics.metrics import LLMUsageMetricsData
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from voice.bots.processors.sink import EmitSink
from voice.protocol import rtvi


@dataclass
class UsageUnknownFrame(SystemFrame):
    """Pushed by an LLM service after a completion whose response carried no usage. A system
    frame like ``MetricsFrame``, because those travel ahead of the response's other frames."""


class TokenMetricsEmitter(FrameProcessor):
    """One ``metrics`` event per LLM completion, carrying that completion's token entry.

    Why: the bridge counts agent turns from token entries, so every completion (each
    tool-calling round too) must produce exactly one entry, also when the endpoint sent no
    usage (llama.cpp's server does not while streaming; the service then pushes a
    ``UsageUnknownFrame``): that entry has null counts and source ``unknown``. ``usage_source``
    says what reported counts are (``server`` or ``estimate``).
    """

    def __init__(self, sink: EmitSink, *, usage_source: str = rtvi.USAGE_SERVER, **kwargs) -> None:
        super().__init__(**kwargs)
        self._sink = sink
        self._usage_source = usage_source

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
                    "source": self._usage_source,
                }
                for item in frame.data
                if isinstance(item, LLMUsageMetricsData)
            ]
            if tokens:
                self._sink.send(rtvi.metrics(tokens))
        elif isinstance(frame, UsageUnknownFrame):
            self._sink.send(rtvi.metrics([{"prompt_tokens": None, "completion_tokens": None,
                                           "total_tokens": None, "source": rtvi.USAGE_UNKNOWN}]))
        await self.push_frame(frame, direction)
