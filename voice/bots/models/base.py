"""The pipecat LLM service shared by the built-in models; a policy supplies each decision.

Why a real ``LLMService`` subclass: pipecat's function calling, context aggregation and tool
execution then run exactly as with a real model (architecture.md, "Models"); only the choice of
what to say and which tools to call is replaced.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipecat.frames.frames import (
    Frame,
    FunctionCallFromLLM,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
)
from pipecat.metrics.metrics import LLMTokenUsage
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.llm_service import LLMService
from pipecat.services.settings import LLMSettings

END_TOOL = "end_conversation"
"""The harness tool that ends the call (harness.md §9.3); the toolbox and the policies share it."""


@dataclass
class Decision:
    """What a model does in one completion: optional speech, then optional tool calls."""

    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    hung_up: bool = False
    """The call is over for this side: no completion at all (no text, no usage report)."""


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


class BuiltinLLMService(LLMService):
    """Runs a ``Policy`` on every LLMContextFrame and reports estimated token usage."""

    def __init__(self, policy: Policy, **kwargs: Any) -> None:
        unused = dict.fromkeys(
            ("system_instruction", "temperature", "max_tokens", "top_p", "top_k", "frequency_penalty",
             "presence_penalty", "seed", "filter_incomplete_user_turns", "user_turn_completion_config"),
        )
        super().__init__(settings=LLMSettings(model=policy.model_name, **unused), **kwargs)
        self._policy = policy

    def can_generate_metrics(self) -> bool:
        return True

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMContextFrame):
            await self._complete(frame.context)
        else:
            await self.push_frame(frame, direction)

    async def _complete(self, context: LLMContext) -> None:
        messages = plain_messages(context)
        decision = self._policy.decide(messages)
        if decision.hung_up:
            return
        await self.push_frame(LLMFullResponseStartFrame())
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
            await self.push_frame(LLMFullResponseEndFrame())
