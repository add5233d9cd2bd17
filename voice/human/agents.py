"""Which agent a human call tests when the tester picks none: the built-in agent that acts on
what it hears (``listening``) once it is registered, else the first built-in agent model."""
from __future__ import annotations

from voice.bots.factory import AGENT_MODELS

PREFERRED = "listening"


def builtin_agent_models() -> tuple[str, ...]:
    return tuple(AGENT_MODELS)


def default_agent_model() -> str:
    return PREFERRED if PREFERRED in AGENT_MODELS else AGENT_MODELS[0]
