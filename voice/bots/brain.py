"""The contract between the protocol host of a bot and what produces its behaviour.

``voice.bots.host.BotHost`` speaks the harness protocol on a channel (handshake, the six
handlers, shared_state); a ``Brain`` produces the conversation: a pipecat pipeline (the
built-in agent and passenger) or the protocol double used by tests.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Awaitable, Callable, Literal, Protocol

from voice.protocol.channel import AudioChunk, Item

Emit = Callable[[Item], Awaitable[None]]
"""Send an RTVI event dict or an AudioChunk to the bridge over the current connection."""

STOP_BUDGET_SECS = 7.0
"""The longest ``Brain.stop`` may take (settling a tool call, tearing a pipeline down); whoever
waits for a bot to wind down allows at least this much before cancelling it."""


@dataclass(frozen=True)
class BrainConfig:
    """What update_system_prompt hands to the brain (harness.md §5.4)."""

    prompt: str
    tools: dict[str, dict]
    tool_domain: str
    shared_state: dict
    """The bot's shared_state (same object for the bot's lifetime; tools read ``db`` and append
    to ``actions`` in it at call time, since apply_initialization fills it afterwards)."""


class Brain(Protocol):
    async def start(self, emit: Emit) -> None:
        """A new connection is up; events and audio go out through ``emit`` until ``stop``."""

    async def stop(self) -> None:
        """The connection ended; stop emitting (state, prompt and tools are kept). Returns within
        ``STOP_BUDGET_SECS``."""

    async def configure(self, config: BrainConfig) -> None:
        """Replace the LLM context with the prompt and the tool list with ``tools``."""

    async def reset(self) -> None:
        """Reset stateful speech services and per-conversation runtime state."""

    async def handle_text(self, text: str, *, kind: Literal["kickoff", "utterance"]) -> None:
        """``send-text`` kickoff (agent) or the other side's finished utterance (text modality)."""

    async def handle_audio(self, chunk: AudioChunk) -> None:
        """Inbound audio from the bridge (voice modality)."""

    async def context_history(self) -> list[dict]:
        """The LLM message list, after waiting (<= 3 s) for in-flight function calls."""
