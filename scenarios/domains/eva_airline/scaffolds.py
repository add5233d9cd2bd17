"""The 45 scaffolded eva_airline scenarios, generated at import time from the dataset (scenarios.md §11).

Pure module: no Django. Generating (rather than committing generated modules) leaves no prose to
maintain; the rules below reproduce the upstream scaffolds, including their quirks (mid-sentence
descriptions, 300-character personalities, identity items lost to exact key matching).
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from scenarios import data_root
from scenarios.contract import Actions, Persona, Task
from scenarios.domains.eva_airline.scenario_base import (
    SEED_EVA_IDS,
    EvaAirlineBaseScenario,
    eva_id_sort_key,
    scenario_name,
)
from scenarios.registry import register_eval_scenario
from scenarios.voice_prompts import ALPHANUMERIC_RULE, fmt

logger = logging.getLogger(__name__)

# The catalogue module binds the generated classes by name, so they claim it as their home.
CATALOGUE_MODULE = "scenarios.domains.eva_airline.catalogue"
DESCRIPTION_LIMIT = 200
PERSONALITY_LIMIT = 300
NEGOTIATION_LIMIT = 3
EDGE_CASE_LIMIT = 5

# Exact, case-sensitive aliases, first non-empty wins (§11.3).
CONFIRMATION_KEYS = (
    "confirmation_number",
    "confirmation_code",
    "Booking confirmation number",
    "Booking confirmation code",
)
LAST_NAME_KEYS = ("last_name", "passenger_last_name", "Passenger last name")
FIRST_NAME_KEYS = ("first_name", "first_name_if_asked", "first_name_if_requested", "Passenger first name")
FLIGHT_NUMBER_KEYS = ("original_flight_number", "flight_number")


def truncate_description(goal: str) -> str:
    """First 200 characters of the stripped goal, cut back to its last period when there is one."""
    head = goal.strip()[:DESCRIPTION_LIMIT]
    if "." in head:
        return head[: head.rindex(".")] + "."
    return head


def first_value(info: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    """Value of the first key of ``keys`` present in ``info`` with a non-empty value."""
    for key in keys:
        value = info.get(key)
        if value:
            return str(value)
    return None


def identity_guideline(info: Mapping[str, Any]) -> str | None:
    """Confirmation, last name, first name sentences (only those found), or None."""
    confirmation = first_value(info, CONFIRMATION_KEYS)
    last_name = first_value(info, LAST_NAME_KEYS)
    first_name = first_value(info, FIRST_NAME_KEYS)
    sentences = []
    if confirmation:
        sentences.append(f"Your confirmation number is {fmt(confirmation)}.")
    if last_name:
        sentences.append(f"Your last name is {last_name}.")
    if first_name:
        sentences.append(f"Your first name is {first_name}.")
    return " ".join(sentences) or None


def booking_guideline(info: Mapping[str, Any]) -> str | None:
    """The route of the first travel segment only (later legs are ignored), or None."""
    segments = info.get("original_travel_details") or []
    if not segments:
        return None
    first = segments[0]
    origin, destination = first.get("origin"), first.get("destination")
    if not (origin and destination):
        return None
    text = f"Your booking: {fmt(origin)} to {fmt(destination)}"
    if first.get("flight_date"):
        text += f" on {first['flight_date']}"
    if first.get("departure_time"):
        text += f" departing at {first['departure_time']}"
    flight_number = first_value(info, FLIGHT_NUMBER_KEYS)
    if flight_number:
        text += f" (flight {fmt(flight_number)})"
    return text + "."


def scaffold_instructions(starting_utterance: str | None) -> tuple[str, ...]:
    """The six fixed steps; the greeting step only when there is an opening line."""
    steps = []
    if starting_utterance:
        steps.append(f"Greet the agent and say '{starting_utterance}'")
    steps += [
        "When the agent asks for it, give your confirmation number.",
        "When the agent asks for it, give your last name.",
        "When asked, share your trip details, your constraints and what you would like.",
        "When the agent presents options or asks you to decide, choose an option that meets your must-have "
        "criteria, or follow the failure path in the guidelines if none fit.",
        "Once the work is done and the agent has confirmed it, thank the agent and end the call.",
    ]
    return tuple(steps)


def scaffold_guidelines(goal: Mapping[str, Any]) -> tuple[str, ...]:
    """Guidelines in the fixed order of §11.4 (the base appends the hang-up rule)."""
    tree = goal.get("decision_tree") or {}
    info = goal.get("information_required") or {}
    items: list[str] = [ALPHANUMERIC_RULE]
    for extra in (identity_guideline(info), booking_guideline(info)):
        if extra:
            items.append(extra)
    items += [f"Must-have: {text.strip()}" for text in tree.get("must_have_criteria") or []]
    items += [text.strip() for text in (tree.get("negotiation_behavior") or [])[:NEGOTIATION_LIMIT]]
    items += [f"Edge case: {text.strip()}" for text in (tree.get("edge_cases") or [])[:EDGE_CASE_LIMIT]]
    failure = (tree.get("failure_condition") or "").strip()
    if failure:
        items.append(f"Failure path: {failure}")
    escalation = (tree.get("escalation_behavior") or "").strip()
    if escalation:
        items.append(f"Escalation: {escalation}")
    return tuple(items)


def build_scaffold(line: Mapping[str, Any]) -> type[EvaAirlineBaseScenario]:
    """One scenario class from one dataset line (not registered)."""
    eva_id = line["id"]
    goal = line["user_goal"]
    config = line["user_config"]
    high_level = goal["high_level_user_goal"].strip()
    attrs = {
        "__module__": CATALOGUE_MODULE,
        "__doc__": f"eva {eva_id}, scaffolded from the dataset.",
        "name": scenario_name(eva_id),
        "eva_id": eva_id,
        "description": truncate_description(high_level),
        "user_persona": Persona(
            role="airline passenger",
            name=config["name"].strip(),
            background=high_level,
            personality=config["user_persona"].strip()[:PERSONALITY_LIMIT],
        ),
        "user_task": Task(goal=high_level),
        "user_actions": Actions(
            instructions=scaffold_instructions(goal.get("starting_utterance")),
            guidelines=scaffold_guidelines(goal),
        ),
    }
    class_name = "EvaAirline" + eva_id.replace(".", "")
    return type(class_name, (EvaAirlineBaseScenario,), attrs)


def scaffold_lines(index: Mapping[str, Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Every non-seed dataset line, in ascending numeric id order."""
    ids = sorted((eva_id for eva_id in index if eva_id not in SEED_EVA_IDS), key=eva_id_sort_key)
    return [index[eva_id] for eva_id in ids]


def build_scaffolds(index: Mapping[str, Mapping[str, Any]]) -> list[type[EvaAirlineBaseScenario]]:
    """All scaffold classes for a dataset index, in registry order."""
    return [build_scaffold(line) for line in scaffold_lines(index)]


def register_scaffolds() -> list[type[EvaAirlineBaseScenario]]:
    """Build and register the scaffolds from the live dataset; call after the seeds are registered.

    A missing or unreadable data root registers nothing (and logs why) instead of breaking Django
    start-up: the ``scenarios`` system check reports the problem with the path tried.
    """
    try:
        classes = build_scaffolds(data_root.dataset_index())
    except (data_root.DataRootError, OSError, ValueError, KeyError) as exc:
        logger.warning("eva_airline scaffolds not registered: %s", exc)
        return []
    return [register_eval_scenario(cls) for cls in classes]
