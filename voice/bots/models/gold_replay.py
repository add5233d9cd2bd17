"""``gold-replay`` agent: greets, asks for identity, replays the scenario's gold calls, closes.

It advances by counting turns in its own context, never by understanding what was said, so ASR
noise in voice modality cannot derail it; the scenario is recognised from the database the
bridge sent (``shared_state["db"]``), which works in process and over the WebSocket alike.
"""
from __future__ import annotations

import functools
import json
from typing import Any, Callable, Optional

from loguru import logger

from voice.bots.models.base import END_TOOL, GREETING, Decision, conversation, message_text, tool_calls_made

ASK_IDENTITY = (
    "I can help with that. May I have your confirmation number and the last name on the booking?"
)
CONFIRMATION = (
    "Thank you, that is all taken care of and your reservation has been updated. "
    "Is there anything else I can help you with?"
)
CONFIRMATION_MARKER = "Is there anything else I can help you with?"
GOODBYE = "You're welcome. Thank you for calling, and have a great day. Goodbye."


def _canonical(db: Any) -> str:
    return json.dumps(db, sort_keys=True, separators=(",", ":"), default=str)


@functools.lru_cache(maxsize=4)
def _initial_index(root: str) -> tuple[dict[str, str], dict[str, str]]:
    """(canonical initial db -> eva id, reservation key -> eva id) for the data root."""
    from scenarios.data_root import dataset_index, initial_db

    by_db: dict[str, str] = {}
    by_key: dict[str, str] = {}
    for eva_id in dataset_index():
        db = initial_db(eva_id)
        by_db[_canonical(db)] = eva_id
        for key in (db.get("reservations") or {}):
            by_key.setdefault(str(key).upper(), eva_id)
    return by_db, by_key


def identify_scenario(db: Any) -> Optional[str]:
    """The eva id whose initial database is ``db`` (exact match first, then by reservation key)."""
    if not isinstance(db, dict) or not db:
        return None
    from scenarios.data_root import get_eval_data_root

    by_db, by_key = _initial_index(str(get_eval_data_root()))
    exact = by_db.get(_canonical(db))
    if exact:
        return exact
    for key in db.get("reservations") or {}:
        if str(key).upper() in by_key:
            return by_key[str(key).upper()]
    return None


def gold_actions(eva_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The gold calls of a scenario except the closing end_conversation."""
    from scenarios.domains.eva_airline.gold import gold_calls

    return [(c["tool"], dict(c.get("params") or {})) for c in gold_calls(eva_id) if c["tool"] != END_TOOL]


class GoldReplayPolicy:
    model_name = "gold-replay"

    def __init__(self, shared_state: Callable[[], dict]) -> None:
        self._shared_state = shared_state
        self._plan: Optional[list[tuple[str, dict[str, Any]]]] = None
        self._plan_db_key: Optional[str] = None

    def reset(self) -> None:
        self._plan = None
        self._plan_db_key = None

    def _actions(self) -> list[tuple[str, dict[str, Any]]]:
        """The call list, fixed at the first call of a conversation (the db changes after it)."""
        if self._plan is None:
            db = self._shared_state().get("db")
            eva_id = identify_scenario(db)
            if eva_id is None:
                logger.warning("gold-replay: the database matches no eva_airline scenario")
                self._plan = []
            else:
                self._plan = gold_actions(eva_id)
        return self._plan

    def decide(self, messages: list[dict[str, Any]]) -> Decision:
        convo = conversation(messages)
        if not convo:
            return Decision(text=GREETING)
        calls = tool_calls_made(convo)
        if END_TOOL in calls:
            return Decision(hung_up=True)
        if not calls:
            # A fresh conversation: the plan is read from the (still initial) database.
            self._plan = None
        done = len(calls)
        confirmed = any(
            m.get("role") == "assistant" and CONFIRMATION_MARKER in message_text(m) for m in convo
        )
        user_turns = sum(1 for m in convo if m.get("role") == "user")
        if convo[-1].get("role") == "tool":
            actions = self._actions()
            if done < len(actions):
                return Decision(calls=[actions[done]])
            return Decision(text=CONFIRMATION)
        if user_turns <= 1:
            return Decision(text=GREETING)
        if user_turns == 2:
            return Decision(text=ASK_IDENTITY)
        actions = self._actions()
        if done < len(actions):
            return Decision(calls=[actions[done]])
        if not confirmed:
            return Decision(text=CONFIRMATION)
        return Decision(text=GOODBYE, calls=[(END_TOOL, {})])
