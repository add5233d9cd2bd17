"""``EvaAirlineBaseScenario``: everything an eva scenario derives from its ``eva_id`` (scenarios.md §5,
§6, §10).

Pure module: no Django. A concrete scenario declares only ``name``, ``eva_id``, ``description``,
``user_persona``, ``user_task`` and ``user_actions``; fixture reads are lazy so that defining or
listing scenarios never touches the data root.
"""
from __future__ import annotations

import copy
from functools import cached_property
from typing import Any

from scenarios import data_root
from scenarios.contract import Actions, EvalScenario, Persona, Resources, Task, render_prompt
from scenarios.voice_prompts import (
    ALPHANUMERIC_RULE,
    END_CONVERSATION_GUIDELINE,
    EXECUTION_HONESTY_GUIDELINE,
    GENERAL_VOICE_PROMPT,
    JOURNEY_ID_RULE,
    USER_HANGUP_DESCRIPTION,
    USER_HANGUP_RULE,
)

DOMAIN = "eva_airline"
NAME_PREFIX = f"{DOMAIN}__"
ADDITIONAL_NOTES_HEADING = "## Additional Notes to Follow"
SUCCESS_SIGNALS = ("db_state_match", "clean_exit")
# The hand-authored scenarios (seeds.py); every other dataset line is scaffolded.
SEED_EVA_IDS = ("1.1.2", "2.1.1", "3.1.3", "5.1.1", "7.2.1")
# Voice round trips are ~10x slower than text; a healthy run is 12–14 turns plus a 3–4 turn close.
MAX_DURATION_SECONDS = 900

# LLM-facing tool names (tools.md §3), in the order the agent is offered them.
AGENT_TOOL_NAMES = (
    "get_reservation",
    "get_flight_status",
    "get_disruption_info",
    "search_rebooking_options",
    "rebook_flight",
    "cancel_reservation",
    "process_refund",
    "assign_seat",
    "add_baggage_allowance",
    "add_meal_request",
    "add_to_standby",
    "issue_travel_credit",
    "issue_hotel_voucher",
    "issue_meal_voucher",
    "transfer_to_agent",
    "end_conversation",
)

AGENT_PERSONALITY = (
    "Calm, professional and concise. Listens first, confirms critical details before acting, and "
    "explains fees and policies before making any change."
)


class EvaAirlineBaseScenario(EvalScenario):
    """Shared derivations for the 50 eva_airline scenarios; subclasses set ``eva_id``."""

    domain = DOMAIN
    success_signals = SUCCESS_SIGNALS
    max_duration = MAX_DURATION_SECONDS
    reference_answer = None
    eva_id: str = ""

    # -- fixture-derived state (lazy, cached per instance) -------------------------------------------

    @cached_property
    def scenario_db(self) -> dict[str, Any]:
        """Initial database ``<data root>/<eva_id>.json``. Shared cache: read it, never mutate it."""
        return data_root.initial_db(self.eva_id)

    def fresh_db(self) -> dict[str, Any]:
        """A deep copy of the initial database that the caller may mutate."""
        return copy.deepcopy(self.scenario_db)

    @cached_property
    def current_date(self) -> str:
        """"Today" for this scenario: the fixture's ``_current_date``."""
        return self.scenario_db["_current_date"]

    @cached_property
    def expected_scenario_db(self) -> dict[str, Any]:  # type: ignore[override]
        """Gold end-state database from the dataset line (KeyError when the id is absent)."""
        return data_root.expected_db(self.eva_id)

    @cached_property
    def policy(self) -> str:
        """The airline policy (YAML ``instructions``), trailing whitespace removed."""
        return data_root.agent_config()["instructions"].rstrip()

    @property
    def is_seed(self) -> bool:
        """Whether this scenario's prose is hand-authored rather than scaffolded."""
        return self.eva_id in SEED_EVA_IDS

    @property
    def information_required(self) -> dict[str, Any]:
        """A copy of the dataset line's ``user_goal.information_required``."""
        return copy.deepcopy(data_root.dataset_line(self.eva_id)["user_goal"]["information_required"])

    @property
    def confirmation_number(self) -> str:
        """The key of the single reservation in the initial database."""
        reservations = self.scenario_db["reservations"]
        if len(reservations) != 1:
            raise ValueError(f"eva {self.eva_id}: expected one reservation, found {len(reservations)}")
        return next(iter(reservations))

    # -- agent side ----------------------------------------------------------------------------------

    @property
    def agent_persona(self) -> Persona:  # type: ignore[override]
        """Introspection only: the live agent prompt is built by :meth:`get_agent_prompt`."""
        return Persona(
            role="customer service agent",
            background=data_root.agent_config()["role"].rstrip(),
            personality=AGENT_PERSONALITY,
        )

    @property
    def agent_task(self) -> Task:  # type: ignore[override]
        """Introspection only."""
        return Task(
            goal=data_root.agent_config()["description"],
            background="You are handling an inbound customer-service call for SkyWay Airlines.",
        )

    @property
    def agent_actions(self) -> Actions:  # type: ignore[override]
        return Actions()

    @property
    def agent_resources(self) -> Resources:  # type: ignore[override]
        return Resources(
            tools={name: {} for name in AGENT_TOOL_NAMES},
            information=(f"Today's date is {self.current_date}.",),
        )

    def get_agent_prompt(self) -> str:
        """Role, full policy, then exactly one block of voice/runtime notes (§6.1)."""
        blocks = [
            data_root.agent_config()["role"].rstrip(),
            self.policy,
            ADDITIONAL_NOTES_HEADING,
            f"Today is {self.current_date}.",
            GENERAL_VOICE_PROMPT.strip(),
            ALPHANUMERIC_RULE,
            JOURNEY_ID_RULE,
            END_CONVERSATION_GUIDELINE,
            EXECUTION_HONESTY_GUIDELINE,
        ]
        return "\n\n".join(blocks)

    # -- user side -------------------------------------------------------------------------------------

    @property
    def user_resources(self) -> Resources:  # type: ignore[override]
        return Resources(tools={"end_conversation": {"description": USER_HANGUP_DESCRIPTION}})

    def get_user_prompt(self) -> str:
        """Generic rendering with the hang-up rule appended as the last guideline (§10.1)."""
        actions = self.user_actions.with_guidelines([USER_HANGUP_RULE])
        persona, task = self.user_persona, self.user_task
        if persona is None or task is None:
            raise ValueError(f"scenario {self.name!r} has no user persona/task")
        return render_prompt(persona, task, actions, self.user_resources)

    # -- state ---------------------------------------------------------------------------------------

    def setup_shared_state(self, state: dict[str, Any], side: str) -> dict[str, Any]:
        """Agent side gets the whole initial database inline (a private copy); the user gets nothing."""
        if side == "agent":
            state["db"] = self.fresh_db()
        return state


def scenario_name(eva_id: str) -> str:
    """Scaffold naming: ``eva_airline__`` + the id with dots replaced by underscores."""
    return NAME_PREFIX + eva_id.replace(".", "_")


def eva_id_sort_key(eva_id: str) -> tuple[int, ...]:
    """Numeric ordering of ids (``1.1.3`` < ``1.1.10``)."""
    return tuple(int(part) for part in eva_id.split("."))
