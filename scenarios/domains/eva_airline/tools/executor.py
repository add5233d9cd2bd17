"""Dispatch one LLM tool call: parse arguments, validate, guard the DB, run, never raise (§1.2, §1.8).

A failed call leaves the DB, counters and action log exactly as they were: tools check before they
mutate, and as a safety net an unexpected exception restores a snapshot taken before the call.
"""
from __future__ import annotations

import copy
import json
from typing import Any, Callable

from . import reads, rebook, writes
from .errors import ToolError, error_result
from .session import ToolSession
from .validation import validate

Handler = Callable[[ToolSession, dict[str, Any]], dict]

END_CONVERSATION = "end_conversation"
END_RESULT = {"success": True, "message": "Exit message sent.", "status": "success"}
END_MESSAGE = "The task is finished."

HANDLERS: dict[str, Handler] = {
    "get_reservation": reads.get_reservation,
    "get_flight_status": reads.get_flight_status,
    "get_disruption_info": reads.get_disruption_info,
    "search_rebooking_options": reads.search_rebooking_options,
    "rebook_flight": rebook.rebook_flight,
    "cancel_reservation": writes.cancel_reservation,
    "process_refund": writes.process_refund,
    "assign_seat": writes.assign_seat,
    "add_baggage_allowance": writes.add_baggage_allowance,
    "add_meal_request": writes.add_meal_request,
    "add_to_standby": writes.add_to_standby,
    "issue_travel_credit": writes.issue_travel_credit,
    "issue_hotel_voucher": writes.issue_hotel_voucher,
    "issue_meal_voucher": writes.issue_meal_voucher,
    "transfer_to_agent": writes.transfer_to_agent,
}

TOOL_NAMES: tuple[str, ...] = tuple(HANDLERS) + (END_CONVERSATION,)
WRITE_TOOL_NAMES: frozenset[str] = frozenset({
    "rebook_flight", "cancel_reservation", "process_refund", "assign_seat", "add_baggage_allowance",
    "add_meal_request", "add_to_standby", "issue_travel_credit", "issue_hotel_voucher", "issue_meal_voucher",
    "transfer_to_agent",
})
# Tools that may touch the DB (get_reservation writes ``session``): snapshot them before running.
_MUTATING = WRITE_TOOL_NAMES | {"get_reservation"}


def execute_tool(session: ToolSession, name: str, arguments: object) -> dict:
    """Run tool ``name`` with ``arguments`` (dict or JSON text) and return its result envelope."""
    try:
        if name == END_CONVERSATION:
            session.end_requested = True
            session.end_message = END_MESSAGE
            return dict(END_RESULT)
        handler = HANDLERS.get(name) if isinstance(name, str) else None
        if handler is None:
            return error_result("tool_not_found", f"Tool '{name}' not found. Available tools: {', '.join(TOOL_NAMES)}")
        params = validate(name, parse_arguments(arguments))
        if not isinstance(session.db, dict) or not session.db:
            return error_result("db_not_initialized", "Scenario database not loaded; the harness must seed it first")
        return _run_guarded(session, name, handler, params)
    except ToolError as exc:
        return exc.as_result()
    except Exception as exc:  # never raise into the LLM loop
        return error_result("execution_error", f"Tool {name!r} failed: {type(exc).__name__}: {exc}")


def parse_arguments(arguments: object) -> dict:
    """A dict as is, JSON text holding an object parsed; anything else is ``invalid_parameter``."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            raise ToolError("invalid_parameter", f"Invalid or missing parameter 'arguments': not valid JSON ({exc})") from None
    if not isinstance(arguments, dict):
        raise ToolError("invalid_parameter", "Invalid or missing parameter 'arguments': must be a JSON object")
    return arguments


def _run_guarded(session: ToolSession, name: str, handler: Handler, params: dict[str, Any]) -> dict:
    if name not in _MUTATING:
        return handler(session, params)
    db_before = copy.deepcopy(session.db)
    counters_before = dict(session.counters)
    actions_before = len(session.actions)
    state_before = (session.end_requested, session.end_message)
    try:
        return handler(session, params)
    except BaseException:
        session.db.clear()
        session.db.update(db_before)
        session.counters.clear()
        session.counters.update(counters_before)
        del session.actions[actions_before:]
        session.end_requested, session.end_message = state_before
        raise


def result_status(result: dict) -> tuple[str, str | None]:
    """``("success", None)`` or ``("error", error_type)``; end_conversation's result is a success."""
    if isinstance(result, dict):
        if result.get("status") == "success" or (result.get("success") is True and "status" not in result):
            return "success", None
        if result.get("status") == "error":
            return "error", result.get("error_type")
    return "error", None
