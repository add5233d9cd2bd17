"""The pipecat LLM service shared by the built-in models; a policy supplies each decision.

Why a real ``LLMService`` subclass: pipecat's function calling, context aggregation and tool
execution then run exactly as with a real model (architecture.md, "Models"); only the choice of
what to say and which tools to call is replaced.
"""
from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipecat.adapters.llm.base_llm_adapter import BaseLLMAdapter
from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
from pipecat.frames.frames import (
    CancelFrame,
    EndFrame,
    Frame,
    FunctionCallFromLLM,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    VADUserStartedSpeakingFrame,
)
from pipecat.metrics.metrics import LLMTokenUsage
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.llm_service import LLMService
from pipecat.services.settings import LLMSettings

END_TOOL = "end_conversation"
"""The harness tool that ends the call (harness.md §9.3); the toolbox and the policies share it."""
WAIT_SECS = 2.5
"""How long a policy's ``wait`` holds back an answer when nothing more is heard."""
GREETING = "Thank you for calling the airline. How can I help you today?"
"""The built-in agents' first line (one wording for all of them)."""


@dataclass
class Decision:
    """What a model does in one completion: optional speech, then optional tool calls."""

    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    hung_up: bool = False
    """The call is over for this side: no completion at all (no text, no usage report)."""
    wait: bool = False
    """Say nothing yet: what was heard looks like the first part of a turn whose rest is coming
    (no completion either; the next heard part is read together with this one), or a tool call
    still running whose result will decide. Only policies that wait take
    ``decide(messages, waited=True)``: the call made when nothing more came."""


class Policy(Protocol):
    """A deterministic model: decides from the context message list alone (so it survives
    reconnects and needs no state of its own beyond configuration)."""

    model_name: str

    def decide(self, messages: list[dict[str, Any]]) -> Decision: ...


def estimate_tokens(text: str) -> int:
    """Rough token count (words x 1.3) used for the usage report of built-in models."""
    return max(1, round(len(text.split()) * 1.3)) if text.strip() else 0


def message_text(message: dict[str, Any]) -> str:
    """The plain text of a message's content (string or list of text parts)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def plain_messages(context: LLMContext) -> list[dict[str, Any]]:
    return [m for m in context.get_messages() if isinstance(m, dict)]


def conversation(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages after the prompt (system/developer messages dropped)."""
    return [m for m in messages if m.get("role") not in ("system", "developer")]


def tool_calls_made(messages: list[dict[str, Any]]) -> list[str]:
    """Names of the tool calls in the context, in order."""
    names: list[str] = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            names.append(call.get("function", {}).get("name", ""))
    return names


def last_role(messages: list[dict[str, Any]]) -> str | None:
    convo = conversation(messages)
    return convo[-1].get("role") if convo else None


class PolicyAdapter(BaseLLMAdapter):
    """The adapter of a built-in model: a policy reads pipecat's own context, so there is no
    provider format to convert to. Without it pipecat gives every service the OpenAI adapter,
    whose import of the openai package takes about 0.45 s in each process."""

    @property
    def id_for_llm_specific_messages(self) -> str:
        return "builtin"

    async def get_llm_invocation_params(self, context: LLMContext, **kwargs: Any) -> dict[str, Any]:
        return {"messages": plain_messages(context), "tools": context.tools}

    def to_provider_tools_format(self, tools_schema: ToolsSchema) -> list[dict[str, Any]]:
        return [tool.to_default_dict() for tool in tools_schema.standard_tools]

    def get_messages_for_logging(self, context: LLMContext) -> list[dict[str, Any]]:
        return plain_messages(context)


class BuiltinLLMService(LLMService):
    """Runs a ``Policy`` on every LLMContextFrame and reports estimated token usage."""

    adapter_class = PolicyAdapter

    def __init__(self, policy: Policy, **kwargs: Any) -> None:
        unused = dict.fromkeys(
            ("system_instruction", "temperature", "max_tokens", "top_p", "top_k", "frequency_penalty",
             "presence_penalty", "seed", "filter_incomplete_user_turns", "user_turn_completion_config"),
        )
        super().__init__(settings=LLMSettings(model=policy.model_name, **unused), **kwargs)
        self._policy = policy
        self._wait_task: asyncio.Task | None = None

    def can_generate_metrics(self) -> bool:
        return True

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMContextFrame):
            await self._stop_waiting()  # new input supersedes a pending wait
            await self._complete(frame.context)
        else:
            if isinstance(frame, VADUserStartedSpeakingFrame):
                # The other side speaks again: the rest of the turn is coming, and the turn it
                # ends (the collector always ends one) decides; the clock must not answer now,
                # over it (a loaded TTS leaves gaps between an agent's sentences).
                await self._stop_waiting()
            if isinstance(frame, (EndFrame, CancelFrame)):
                await self._stop_waiting()
            await self.push_frame(frame, direction)

    async def _stop_waiting(self) -> None:
        task, self._wait_task = self._wait_task, None
        if task is not None and not task.done():
            await self.cancel_task(task)

    async def _answer_after_waiting(self, context: LLMContext) -> None:
        """A wait is bounded: with nothing more heard, decide again, now without waiting (a
        turn the ASR cut short would otherwise stall the call until the inactivity timeout)."""
        await asyncio.sleep(WAIT_SECS)
        self._wait_task = None
        await self._complete(context, waited=True)

    async def _complete(self, context: LLMContext, *, waited: bool = False) -> None:
        messages = plain_messages(context)
        decision = self._policy.decide(messages, waited=True) if waited else self._policy.decide(messages)
        if decision.wait and not waited:
            self._wait_task = self.create_task(self._answer_after_waiting(context))
            return
        if decision.hung_up or decision.wait:
            return
        start, end = LLMFullResponseStartFrame(), LLMFullResponseEndFrame()
        if not decision.text:
            # A tool-only reply: nothing to speak, so the TTS must not open (and then fail) a context.
            start.skip_tts = end.skip_tts = True
        await self.push_frame(start)
        try:
            await self.start_ttfb_metrics()
            if decision.text:
                await self.stop_ttfb_metrics()
                await self.push_frame(LLMTextFrame(decision.text))
            prompt_text = " ".join(message_text(m) for m in messages)
            completion_text = decision.text + " ".join(json.dumps(a) + n for n, a in decision.calls)
            prompt_tokens = estimate_tokens(prompt_text)
            completion_tokens = max(1, estimate_tokens(completion_text))
            await self.start_llm_usage_metrics(
                LLMTokenUsage(
                    prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens,
                    total_tokens=prompt_tokens + completion_tokens,
                )
            )
            if decision.calls:
                await self.run_function_calls(
                    [
                        FunctionCallFromLLM(
                            function_name=name,
                            tool_call_id=f"call_{uuid.uuid4().hex[:16]}",
                            arguments=dict(arguments),
                            context=context,
                        )
                        for name, arguments in decision.calls
                    ]
                )
        finally:
            await self.push_frame(end)


RUNNING = "IN_PROGRESS"
"""The content pipecat gives a tool message while its call runs (later the result, "CANCELLED"
for one an interruption stopped, or "COMPLETED" for an empty result)."""


@dataclass(frozen=True)
class ToolExchange:
    """One tool call in the context and its result (``result`` None when the context holds none,
    ``RUNNING`` while the call runs)."""

    name: str
    arguments: dict[str, Any]
    result: Any = None

    @property
    def succeeded(self) -> bool:
        return isinstance(self.result, dict) and self.result.get("status") == "success"

    @property
    def running(self) -> bool:
        return self.result == RUNNING


def _json_or_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def tool_exchanges(messages: list[dict[str, Any]]) -> list[ToolExchange]:
    """The tool calls of the context with their results, in call order."""
    results = {m.get("tool_call_id"): _json_or_text(m.get("content")) for m in messages if m.get("role") == "tool"}
    exchanges: list[ToolExchange] = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            arguments = _json_or_text(function.get("arguments") or {})
            exchanges.append(ToolExchange(
                name=function.get("name", ""), arguments=arguments if isinstance(arguments, dict) else {},
                result=results.get(call.get("id"))))
    return exchanges


def heard_since_reply(convo: list[dict[str, Any]]) -> list[str]:
    """The other side's turns since this side last spoke (several when a turn arrived in parts)."""
    parts: list[str] = []
    for message in reversed(convo):
        if message.get("role") == "assistant" and (message_text(message).strip() or message.get("tool_calls")):
            break
        if message.get("role") == "user":
            parts.append(message_text(message))
    return list(reversed(parts))


def looks_unfinished(parts: list[str], *, question_expected: bool = False) -> bool:
    """One heard part that stops mid-sentence (Whisper ends it with a comma), or, when the other
    side always ends its turn with a question, at a statement ("I can help with that." before
    "May I have ...?"): worth waiting once for the rest. Text without punctuation (pocketsphinx)
    never counts as unfinished."""
    if len(parts) != 1:
        return False
    text = parts[0].strip()
    return bool(text) and (text.endswith(",") or (question_expected and text.endswith(".") and "?" not in text))
