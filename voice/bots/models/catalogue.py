"""The built-in models, one table for every place that offers or builds them: the bot factory,
the New-run form, the call page, ``run_eval`` and ``run_bot`` (architecture.md, Models).

Each entry builds its policy from a getter of the brain it serves (the policy reads the brain's
``shared_state`` or ``prompt`` later) and imports the policy only then, so reading the table costs
nothing: the pages and commands use it without loading pipecat."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ROLES = ("agent", "user")


@dataclass(frozen=True)
class BuiltinModel:
    name: str
    role: str  # "agent" or "user"
    summary: str
    build: Callable[[Callable[[], Any]], Any]  # brain getter -> policy


def _listening(brain: Callable[[], Any]) -> Any:
    from voice.bots.models.listening import ListeningAgentPolicy

    return ListeningAgentPolicy(lambda: brain().shared_state)


def _gold_replay(brain: Callable[[], Any]) -> Any:
    from voice.bots.models.gold_replay import GoldReplayPolicy

    return GoldReplayPolicy(lambda: brain().shared_state)


def _null(brain: Callable[[], Any]) -> Any:
    from voice.bots.models.null import NullPolicy

    return NullPolicy()


def _scripted(brain: Callable[[], Any]) -> Any:
    from voice.bots.models.scripted import ScriptedPassengerPolicy

    return ScriptedPassengerPolicy(lambda: brain().prompt)


BUILTIN_MODELS: tuple[BuiltinModel, ...] = (
    BuiltinModel("listening", "agent", "acts on what it heard: parses the spelled identity, looks it up, "
                 "then carries out the scenario's plan", _listening),
    BuiltinModel("gold-replay", "agent", "the oracle: replays the known-good tool calls whatever it hears "
                 "(must score 50/50)", _gold_replay),
    BuiltinModel("null", "agent", "answers politely, never acts, hangs up on its third response "
                 "(the do-nothing floor)", _null),
    BuiltinModel("scripted", "user", "the deterministic passenger derived from its prompt; it listens and "
                 "accepts only offers matching its goal", _scripted),
)

DEFAULT_MODEL = {"agent": "listening", "user": "scripted"}


def builtin_names(role: str) -> tuple[str, ...]:
    """The built-in model names for ``role``, default first."""
    names = [model.name for model in BUILTIN_MODELS if model.role == role]
    return tuple(sorted(names, key=lambda name: name != DEFAULT_MODEL.get(role)))


def builtin_model(role: str, name: str) -> BuiltinModel | None:
    return next((model for model in BUILTIN_MODELS if model.role == role and model.name == name), None)
