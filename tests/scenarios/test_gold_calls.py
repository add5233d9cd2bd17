"""Gold call lists (tools.md §8; §9 case 55) and the tools' public surface."""
from __future__ import annotations

import json

import pytest

from scenarios.data_root import dataset_index, expected_db, initial_db
from scenarios.domains.eva_airline.gold import gold_calls, gold_eva_ids
from scenarios.domains.eva_airline.tools import (
    TOOL_NAMES, WRITE_TOOL_NAMES, ToolSession, execute_tool, result_status, tool_schemas,
)
from scoring.core.canonical import db_hash

NO_WRITE_IDS = ("5.2.5", "7.1.1", "7.2.2", "7.2.8", "7.3.1", "7.4.1")
ALL_IDS = sorted(dataset_index())


def replay(eva_id: str) -> ToolSession:
    session = ToolSession(initial_db(eva_id))
    for call in gold_calls(eva_id):
        result = execute_tool(session, call["tool"], call["params"])
        assert result_status(result) == ("success", None), (eva_id, call, result)
    return session


def test_gold_covers_every_scenario() -> None:
    assert sorted(gold_eva_ids()) == ALL_IDS and len(ALL_IDS) == 50
    with pytest.raises(KeyError):
        gold_calls("9.9.9")


@pytest.mark.parametrize("eva_id", ALL_IDS)
def test_case_55_gold_replay_matches_gold_hash(eva_id: str) -> None:
    calls = gold_calls(eva_id)
    assert calls[-1] == {"tool": "end_conversation", "params": {}}
    assert all(call["tool"] in TOOL_NAMES for call in calls)
    session = replay(eva_id)
    assert session.end_requested is True
    assert db_hash(session.db) == db_hash(expected_db(eva_id))
    written = [call["tool"] for call in calls if call["tool"] in WRITE_TOOL_NAMES]
    assert [action["action_type"] for action in session.actions] == written


@pytest.mark.parametrize("eva_id", NO_WRITE_IDS)
def test_no_write_scenarios(eva_id: str) -> None:
    assert db_hash(expected_db(eva_id)) == db_hash(initial_db(eva_id))
    assert not [call for call in gold_calls(eva_id) if call["tool"] in WRITE_TOOL_NAMES]
    if eva_id in ("7.1.1", "7.4.1"):  # the agent must not authenticate there
        assert not [call for call in gold_calls(eva_id) if call["tool"] == "get_reservation"]


def test_reads_come_first_and_authenticate() -> None:
    for eva_id in ALL_IDS:
        calls = gold_calls(eva_id)
        if eva_id in ("7.1.1", "7.4.1"):
            continue
        first = calls[0]
        conf = next(iter(initial_db(eva_id)["reservations"]))
        assert first["tool"] == "get_reservation" and first["params"]["confirmation_number"] == conf


def test_gold_calls_returns_a_copy() -> None:
    gold_calls("1.1.2")[0]["params"]["confirmation_number"] = "XXXXXX"
    assert gold_calls("1.1.2")[0]["params"]["confirmation_number"] == "ZK3FFW"


def test_gold_session_marker_matches_gold_file() -> None:
    session = replay("1.1.2")
    assert session.db["session"] == expected_db("1.1.2")["session"]


# ---------------------------------------------------------------- public API surface

def test_tool_names_and_schemas() -> None:
    assert TOOL_NAMES == (
        "get_reservation", "get_flight_status", "get_disruption_info", "search_rebooking_options", "rebook_flight",
        "cancel_reservation", "process_refund", "assign_seat", "add_baggage_allowance", "add_meal_request",
        "add_to_standby", "issue_travel_credit", "issue_hotel_voucher", "issue_meal_voucher", "transfer_to_agent",
        "end_conversation",
    )
    assert len(WRITE_TOOL_NAMES) == 11 and "get_reservation" not in WRITE_TOOL_NAMES
    schemas = tool_schemas()
    assert [s["function"]["name"] for s in schemas] == list(TOOL_NAMES)
    by_name = {s["function"]["name"]: s["function"] for s in schemas}
    assert by_name["process_refund"]["parameters"]["properties"]["refund_amount"]["type"] == "number"
    assert by_name["issue_travel_credit"]["parameters"]["properties"]["amount"]["type"] == "number"
    standby = by_name["add_to_standby"]["parameters"]["properties"]["passenger_ids"]
    assert standby["type"] == "array" and standby["items"] == {"type": "string"}
    rebook = by_name["rebook_flight"]["parameters"]
    assert rebook["required"] == ["confirmation_number", "journey_id", "new_journey_id", "rebooking_type", "waive_change_fee"]
    assert "flight_number" in rebook["properties"] and "new_fare_class" in rebook["properties"]
    assert rebook["properties"]["waive_change_fee"]["type"] == "boolean"
    assert "24_hour_rule" in by_name["cancel_reservation"]["parameters"]["properties"]["cancellation_reason"]["enum"]
    end = by_name["end_conversation"]
    assert end["description"] == "End the conversation with the user."
    assert end["parameters"] == {"type": "object", "properties": {}, "required": []}
    assert [s["function"]["name"] for s in tool_schemas(include_end_conversation=False)] == list(TOOL_NAMES[:-1])
    assert tool_schemas(end_conversation_description="Hang up.")[-1]["function"]["description"] == "Hang up."
    json.dumps(schemas)  # plain JSON


def test_execute_tool_argument_forms() -> None:
    session = ToolSession(initial_db("1.1.2"))
    text = json.dumps({"confirmation_number": "ZK3FFW", "last_name": "Rodriguez"})
    assert execute_tool(session, "get_reservation", text)["status"] == "success"
    for bad in ("not json", "[1, 2]", "42", "null", "", None, 42, ["confirmation_number"]):
        assert result_status(execute_tool(session, "get_reservation", bad)) == ("error", "invalid_parameter")
    assert result_status(execute_tool(session, "book_spaceship", {})) == ("error", "tool_not_found")
    assert result_status(execute_tool(session, None, {})) == ("error", "tool_not_found")  # type: ignore[arg-type]
    assert result_status({"status": "weird"}) == ("error", None)
