"""The passenger's brief on the call page: what the simulated passenger is told, for a person.

Built only from the user side of the scenario (persona, task, steps, guidelines, the dataset's
``information_required``). The gold DB, the gold calls and the expected hash live on the agent and
scoring sides and never enter it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from scenarios.voice_prompts import ALPHANUMERIC_RULE, USER_HANGUP_RULE, spell
from voice.entities import spoken_date

_AIRPORT = re.compile(r"\b[A-Z]{3}\b")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_CODE_KEYS = ("confirmation",)


@dataclass(frozen=True)
class Brief:
    name: str | None
    role: str
    background: str | None
    personality: str | None
    goal: str
    steps: list[str]
    guidelines: list[str]
    facts: list[tuple[str, str]] = field(default_factory=list)
    hang_up: str = (
        "Say goodbye and press Hang up when you are done, when you follow the failure path, "
        "or when you refuse a transfer. The agent may also end the call itself."
    )


def _spoken(value: str) -> str:
    """Airport codes followed by their spelled form, as the voice rule asks."""
    return _AIRPORT.sub(lambda m: f"{m.group(0)} ({spell(m.group(0))})", value)


def _facts(information: dict[str, Any]) -> list[tuple[str, str]]:
    facts = []
    for key, value in information.items():
        if not isinstance(value, str):
            continue  # nested preferences are already stated in the goal and the guidelines
        label, lowered = key.replace("_", " ").capitalize(), key.lower()
        if any(word in lowered for word in _CODE_KEYS):
            facts.append((label, f"{value} (say: {spell(value)})"))
        elif "route" in lowered:
            facts.append((label, _spoken(value)))
        else:
            said = spoken_date(value) if _ISO_DATE.match(value) else None
            facts.append((label, f"{said} ({value})" if said else value))
    return facts


def passenger_brief(scenario: Any) -> Brief:
    """The brief of ``scenario`` (an ``EvalScenario``) for a human tester."""
    persona, task, actions = scenario.user_persona, scenario.user_task, scenario.user_actions
    if persona is None or task is None:
        raise ValueError(f"scenario {scenario.name!r} has no passenger persona/task")
    # The spelling rule is summarised by the facts' "say:" forms; the hang-up rule by ``hang_up``.
    guidelines = [g for g in (actions.guidelines if actions else ()) if g not in (ALPHANUMERIC_RULE, USER_HANGUP_RULE)]
    information = getattr(scenario, "information_required", None) or {}
    return Brief(
        name=persona.name,
        role=persona.role,
        background=persona.background,
        personality=persona.personality,
        goal=task.goal,
        steps=list(actions.instructions if actions else ()),
        guidelines=guidelines,
        facts=_facts(information) if isinstance(information, dict) else [],
    )
