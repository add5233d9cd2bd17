"""Which agent a human call tests when the tester picks none, and which built-in ones it offers."""
from __future__ import annotations

from voice.bots.models.catalogue import DEFAULT_MODEL, builtin_names


def builtin_agent_models() -> tuple[str, ...]:
    return builtin_names("agent")


def default_agent_model() -> str:
    return DEFAULT_MODEL["agent"]
