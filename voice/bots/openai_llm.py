"""``GuardedOpenAILLMService``: pipecat's OpenAI service, but no streamed tool call is ever lost
and no completion goes uncounted.

Why: pipecat 1.14 drops a tool call whose argument text is not JSON (a log line, no result), so
the model never learns what went wrong and the conversation idles. This subclass records every
streamed call and hands the dropped ones to the function runner with their raw text as
``RawToolArguments``; the toolbox then answers them with the tools' own error envelope like any
other bad call, and the model is invoked again. A completion whose stream carried no ``usage``
(llama.cpp's server never sends one while streaming) is followed by a ``UsageUnknownFrame``, so
it still counts as a call.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, AsyncIterator, Sequence

from pipecat.services.llm_service import FunctionCallFromLLM
from pipecat.services.openai.llm import OpenAILLMService

from voice.bots.processors.metrics_emitter import UsageUnknownFrame
from voice.bots.toolbox import RawToolArguments


@dataclass
class _StreamedCall:
    tool_call_id: str
    function_name: str
    arguments: str


class _RecordingStream:
    """Passes chunks through unchanged while noting each streamed tool call (per index)."""

    def __init__(self, stream: Any, calls: list[_StreamedCall]) -> None:
        self._stream = stream
        self._calls = calls
        self._iterator: Any = None

    def __aiter__(self) -> AsyncIterator[Any]:
        self._iterator = self._stream.__aiter__()
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[Any]:
        by_index: dict[int, _StreamedCall] = {}
        async for chunk in self._iterator:
            choices = getattr(chunk, "choices", None) or []
            delta = choices[0].delta if choices else None
            for tool_call in (getattr(delta, "tool_calls", None) or [])[:1]:  # pipecat reads the first only
                call = by_index.get(tool_call.index)
                if call is None:
                    call = by_index[tool_call.index] = _StreamedCall("", "", "")
                    self._calls.append(call)
                function = tool_call.function
                if function is not None and function.name:
                    call.function_name += function.name
                    call.tool_call_id = tool_call.id or call.tool_call_id
                if function is not None and function.arguments:
                    call.arguments += function.arguments
            yield chunk

    async def close(self) -> None:
        for closer in ("close", "aclose"):
            method = getattr(self._stream, closer, None)
            if method is not None:
                await method()
                return


class GuardedOpenAILLMService(OpenAILLMService):
    """OpenAILLMService whose every streamed tool call reaches a handler (see module doc)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._streamed_calls: list[_StreamedCall] = []
        self._streamed_context: Any = None
        self._usage_reported = False

    async def start_llm_usage_metrics(self, tokens: Any) -> None:
        self._usage_reported = True
        await super().start_llm_usage_metrics(tokens)

    async def _process_context(self, context: Any) -> None:
        self._usage_reported = False
        await super()._process_context(context)
        if not self._usage_reported:  # a completed response without usage (not a failed one)
            await self.push_frame(UsageUnknownFrame())

    async def get_chat_completions(self, context: Any) -> Any:
        stream = await super().get_chat_completions(context)
        self._streamed_calls, self._streamed_context = [], context
        return _RecordingStream(stream, self._streamed_calls)

    async def run_function_calls(self, function_calls: Sequence[FunctionCallFromLLM]) -> None:
        await super().run_function_calls(self._with_dropped_calls(function_calls))

    def _with_dropped_calls(self, function_calls: Sequence[FunctionCallFromLLM]) -> list[FunctionCallFromLLM]:
        """The calls pipecat parsed plus, in stream order, those it dropped for unparseable JSON."""
        streamed, self._streamed_calls = self._streamed_calls, []
        parsed = {call.tool_call_id: call for call in function_calls}
        if not streamed:
            return list(function_calls)
        context = function_calls[0].context if function_calls else self._streamed_context
        ordered: list[FunctionCallFromLLM] = []
        for call in streamed:
            if not call.function_name:
                continue
            if call.tool_call_id in parsed:
                ordered.append(parsed.pop(call.tool_call_id))
            else:
                ordered.append(FunctionCallFromLLM(
                    function_name=call.function_name,
                    tool_call_id=call.tool_call_id,
                    arguments=RawToolArguments(call.arguments),  # type: ignore[arg-type]
                    context=context,
                ))
        return ordered + list(parsed.values())
