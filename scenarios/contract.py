"""The generic scenario contract (scenarios.md §3).

Pure module: no Django. The harness calls a scenario object directly (prompts, tools, state,
scoring contract); nothing is serialised into an intermediate format except the ``scenario_config/``
snapshot written by :meth:`EvalScenario.save`.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from scenarios.voice_prompts import GENERAL_VOICE_PROMPT

STAY_IN_ROLE_LINE = (
    "Stay in this role for the whole conversation and complete the task below using the information "
    "that follows."
)
INSTRUCTIONS_HEADER = "Follow these steps in order, one step per turn; never combine several steps in one turn."
GUIDELINES_HEADER = "Always comply with these guidelines throughout the task."
SECTION_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Persona:
    """Who a side is. ``behavior_config``/``voice_config`` are parked upstream fields, never rendered."""

    role: str
    name: str | None = None
    background: str | None = None
    personality: str | None = None
    language: str | None = None
    accent: str | None = None
    behavior_config: Mapping[str, Any] = field(default_factory=dict)
    voice_config: Mapping[str, Any] = field(default_factory=dict)

    def render(self) -> str:
        # The article is always "a": upstream never adjusts it, and prompts must match upstream.
        lines = [f"You are a {self.role}. "]
        if self.name:
            lines.append(f"Your name is {self.name}. ")
        if self.background:
            lines.append(self.background)
        if self.personality:
            lines.append(self.personality)
        if self.language and self.accent:
            lines.append(f"You speak {self.language} with a {self.accent} accent.")
        elif self.language:
            lines.append(f"You speak {self.language}.")
        elif self.accent:
            lines.append(f"You speak with a {self.accent} accent.")
        lines.append(f"{STAY_IN_ROLE_LINE}\n{GENERAL_VOICE_PROMPT.strip()}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Task:
    """What a side wants to achieve."""

    goal: str
    background: str | None = None

    def render(self) -> str:
        text = "# Task\n\n"
        if self.background:
            text += f"{self.background}\n\n"
        # Two trailing newlines: once joined, three empty lines separate this from "# Actions".
        return text + f"Your goal is to: {self.goal}\n\n"


@dataclass(frozen=True)
class Actions:
    """Ordered steps and standing guidelines (lists are stored as tuples so instances can be shared)."""

    instructions: tuple[str, ...] = ()
    guidelines: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "instructions", tuple(self.instructions))
        object.__setattr__(self, "guidelines", tuple(self.guidelines))

    def with_guidelines(self, extra: Iterable[str]) -> Actions:
        """A copy with ``extra`` appended to the guidelines."""
        return dataclasses.replace(self, guidelines=(*self.guidelines, *extra))

    def render(self) -> str:
        subsections = []
        if self.instructions:
            steps = [f"Step {i}: {text}" for i, text in enumerate(self.instructions, start=1)]
            subsections.append("\n".join(["## Instructions", INSTRUCTIONS_HEADER, *steps]))
        if self.guidelines:
            items = [f"- {text}" for text in self.guidelines]
            subsections.append("\n".join(["## Guidelines", GUIDELINES_HEADER, *items]))
        return "\n".join(["# Actions", *(["\n\n".join(subsections)] if subsections else [])])


@dataclass(frozen=True)
class Resources:
    """Tools (sent separately as JSON, never rendered), documents and information."""

    tools: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    documents: Mapping[str, str] = field(default_factory=dict)
    information: tuple[str, ...] = ()
    info_sections: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "information", tuple(self.information))

    def tools_json(self) -> str:
        """The tool map as the JSON string sent to a bot (``"{}"`` when empty)."""
        return json.dumps(dict(self.tools))

    def render(self) -> str:
        blocks = ["# Resources"]
        if self.documents:
            docs = [f"- {name}: {path}" for name, path in self.documents.items()]
            blocks.append("\n".join(["## Documents", *docs]))
        if self.information:
            blocks.append("\n".join(["## Information", *(f"- {line}" for line in self.information)]))
        for heading, body in self.info_sections.items():
            blocks.append(f"## {heading}\n{body}")
        return SECTION_SEPARATOR.join(blocks)


def render_prompt(persona: Persona, task: Task, actions: Actions, resources: Resources) -> str:
    """Generic prompt of one side: its four sections joined by one blank line (§3.1)."""
    return SECTION_SEPARATOR.join([persona.render(), task.render(), actions.render(), resources.render()])


# Scenario-level fields the constructor may fill, with their defaults (§3.2).
FIELD_DEFAULTS: dict[str, Any] = {
    "name": "",
    "domain": "default",
    "description": None,
    "max_duration": None,
    "success_signals": None,
    "reference_answer": None,
    "reference_file": "reference_answer.json",
    "ignore_capitalization": False,
    "ignore_punctuation": False,
    "clean_text": False,
    "disallow_extra_items": False,
    "expected_scenario_db": None,
    "expected_user_db": None,
    "db_state_assertions": None,
    "nl_assertions": None,
    "initialization_actions": None,
    "noise_config": None,
}
COMPARATOR_FLAGS = ("ignore_capitalization", "ignore_punctuation", "clean_text", "disallow_extra_items")


class EvalScenario:
    """Base of every evaluation case.

    Class-level declarations win over constructor arguments, so a registered scenario cannot be
    reconfigured by accident; the constructor only fills what the class left at the base default.
    """

    name: str = ""
    domain: str = "default"
    description: str | None = None
    max_duration: int | float | None = None
    success_signals: tuple[str, ...] | list[str] | None = None
    reference_answer: Any = None
    reference_file: str = "reference_answer.json"
    ignore_capitalization: bool = False
    ignore_punctuation: bool = False
    clean_text: bool = False
    disallow_extra_items: bool = False
    expected_scenario_db: dict[str, Any] | None = None
    expected_user_db: dict[str, Any] | None = None
    db_state_assertions: Any = None
    nl_assertions: Any = None
    initialization_actions: Any = None
    noise_config: Any = None

    user_persona: Persona | None = None
    user_task: Task | None = None
    user_actions: Actions = Actions()
    user_resources: Resources = Resources()
    agent_persona: Persona | None = None
    agent_task: Task | None = None
    agent_actions: Actions = Actions()
    agent_resources: Resources = Resources()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:
            return
        signals = _class_lookup(cls, "success_signals")
        if isinstance(signals, (property, cached_property)):
            return  # a computed whitelist is only known per instance
        if not signals:
            raise TypeError(f"scenario class {cls.__name__} declares name={cls.name!r} but no success_signals")

    def __init__(self, **kwargs: Any) -> None:
        for key, value in kwargs.items():
            if key not in FIELD_DEFAULTS:
                raise TypeError(f"{type(self).__name__}() got an unknown scenario field {key!r}")
            if not _declared_below_base(type(self), key):
                setattr(self, key, value)

    # -- prompts and tools ---------------------------------------------------------------------

    def get_user_prompt(self) -> str:
        """Generic rendering of the user side."""
        return render_prompt(*self._side_parts("user"))

    def get_agent_prompt(self) -> str:
        """Generic rendering of the agent side."""
        return render_prompt(*self._side_parts("agent"))

    def get_user_tools(self) -> str:
        """User tool map as a JSON string."""
        return self.user_resources.tools_json()

    def get_agent_tools(self) -> str:
        """Agent tool map as a JSON string."""
        return self.agent_resources.tools_json()

    def _side_parts(self, side: str) -> tuple[Persona, Task, Actions, Resources]:
        persona, task = getattr(self, f"{side}_persona"), getattr(self, f"{side}_task")
        if persona is None or task is None:
            raise ValueError(f"scenario {self.name!r} has no {side}_persona/{side}_task to render")
        return persona, task, getattr(self, f"{side}_actions"), getattr(self, f"{side}_resources")

    # -- state -----------------------------------------------------------------------------------

    def setup_shared_state(self, state: dict[str, Any], side: str) -> dict[str, Any]:
        """Fill ``state`` (an empty dict) for ``side``; sent to that bot as ``shared_state_init``."""
        return state

    def sync_state(self, agent_db: Any, user_db: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """Cross-side deltas (agent, user); empty unless a domain opts in."""
        return {}, {}

    # -- snapshot ----------------------------------------------------------------------------------

    def metadata(
        self, *, expected_db_hash: str | None = None, expected_user_db_hash: str | None = None
    ) -> dict[str, Any]:
        """The ``metadata.json`` object (harness.md §14.3). Hashes come from the caller: scenarios
        never import scoring."""
        data: dict[str, Any] = {
            "name": self.name,
            "domain": self.domain,
            "description": self.description,
            "max_duration": self.max_duration,
            "noise_config": _plain(self.noise_config),
            **{flag: bool(getattr(self, flag)) for flag in COMPARATOR_FLAGS},
            "success_signals": list(self.success_signals or ()),
        }
        for key in ("db_state_assertions", "nl_assertions", "initialization_actions"):
            if getattr(self, key):
                data[key] = _plain(getattr(self, key))
        if expected_db_hash:
            data["expected_db_hash"] = expected_db_hash
        if expected_user_db_hash:
            data["expected_user_db_hash"] = expected_user_db_hash
        return data

    def save(
        self,
        directory: str | Path,
        *,
        expected_db_hash: str | None = None,
        expected_user_db_hash: str | None = None,
    ) -> Path:
        """Write the snapshot files into ``directory`` (normally ``<scenario dir>/scenario_config``),
        creating it; returns its path."""
        target = Path(directory)
        target.mkdir(parents=True, exist_ok=True)
        (target / "user_prompt.txt").write_text(self.get_user_prompt(), encoding="utf-8")
        (target / "agent_prompt.txt").write_text(self.get_agent_prompt(), encoding="utf-8")
        _write_json(target / "user_tools.json", json.loads(self.get_user_tools()))
        _write_json(target / "agent_tools.json", json.loads(self.get_agent_tools()))
        metadata = self.metadata(expected_db_hash=expected_db_hash, expected_user_db_hash=expected_user_db_hash)
        _write_json(target / "metadata.json", metadata)
        if self.reference_answer:
            answer = self.reference_answer
            if isinstance(answer, str):
                answer = {"message": answer}
            _write_json(target / self.reference_file, answer)
        return target


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=4), encoding="utf-8")


def _plain(value: Any) -> Any:
    """Dataclass configs (e.g. noise) become their fields; everything else is passed through."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _class_lookup(cls: type, attr: str) -> Any:
    """The raw class attribute (descriptor objects included) found first along the MRO."""
    for klass in cls.__mro__:
        if attr in klass.__dict__:
            return klass.__dict__[attr]
    return None


def _declared_below_base(cls: type, attr: str) -> bool:
    """Whether a subclass of EvalScenario (not the base itself) declares ``attr``."""
    for klass in cls.__mro__:
        if klass is EvalScenario:
            return False
        if attr in klass.__dict__:
            return True
    return False
