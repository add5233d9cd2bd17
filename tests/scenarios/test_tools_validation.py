"""Step V of the airline tools: lax coercion, formats, error mapping (tools.md §1.3, §9 cases 1–10)."""
from __future__ import annotations

import copy

import pytest

from scenarios.data_root import initial_db
from scenarios.domains.eva_airline.tools import ToolSession, execute_tool, result_status
from scenarios.domains.eva_airline.tools.coercion import as_boolean, as_integer, as_number, as_string
from scoring.core.canonical import db_hash

REBOOK_1_1_2 = {
    "confirmation_number": "ZK3FFW", "journey_id": "FL_SK621_20260320", "new_journey_id": "FL_SK703_20260325",
    "rebooking_type": "voluntary", "waive_change_fee": False,
}
SEARCH_1_1_2 = {"origin": "AUS", "destination": "LAX", "date": "2026-03-25", "passenger_count": 1, "fare_class": "main_cabin"}


@pytest.fixture
def session() -> ToolSession:
    return ToolSession(initial_db("1.1.2"))


def expect_error(session: ToolSession, tool: str, params: object, error_type: str) -> dict:
    """Call, assert the error type, and assert the DB, counters and actions did not move."""
    db_before, counters_before, actions_before = copy.deepcopy(session.db), dict(session.counters), list(session.actions)
    result = execute_tool(session, tool, params)
    assert result_status(result) == ("error", error_type), result
    assert set(result) == {"status", "error_type", "message"}
    assert session.db == db_before and db_hash(session.db) == db_hash(db_before)
    assert session.counters == counters_before and session.actions == actions_before
    return result


def expect_not_format_error(session: ToolSession, tool: str, params: dict, error_type: str) -> None:
    result = execute_tool(session, tool, params)
    assert result.get("error_type") != error_type, result


@pytest.mark.parametrize("conf", ["ABC", "ABC12345", "ABC-12", "ABC 12", "ABC!23", 123456, "ZK3FFW\n", "ZK3FF\u00c9"])
def test_case_1_confirmation_number_format(session: ToolSession, conf: object) -> None:
    result = expect_error(
        session, "get_reservation", {"confirmation_number": conf, "last_name": "Rodriguez"},
        "invalid_confirmation_number_format",
    )
    assert "6 alphanumeric" in result["message"]


def test_case_2_missing_parameters(session: ToolSession) -> None:
    result = expect_error(session, "get_reservation", {"last_name": "Rodriguez"}, "invalid_confirmation_number_format")
    assert "last_name" in result["message"]  # the whole argument object is quoted as the value
    result = expect_error(session, "get_reservation", {"confirmation_number": "ZK3FFW"}, "invalid_parameter")
    assert "last_name" in result["message"]


@pytest.mark.parametrize("flight", ["123", "ABCDE", "S1", "SW", "SW12345", "", "SK 621", "SK621 "])
def test_case_3_bad_flight_numbers(session: ToolSession, flight: str) -> None:
    result = expect_error(
        session, "get_flight_status", {"flight_number": flight, "flight_date": "2026-03-20"}, "invalid_flight_number_format"
    )
    assert "2-3 letters" in result["message"]


@pytest.mark.parametrize("flight", ["SK1", "SW12", "ABC1234", "sk621"])
def test_case_3_good_flight_numbers(session: ToolSession, flight: str) -> None:
    result = execute_tool(session, "get_flight_status", {"flight_number": flight, "flight_date": "2026-03-20"})
    assert result["status"] == "success" or result["error_type"] == "not_found"


@pytest.mark.parametrize("date", ["03-20-2026", "20260320", "2026/03/20", "March 20, 2026", "2026-03-20\n", ""])
def test_case_4_bad_dates(session: ToolSession, date: str) -> None:
    result = expect_error(session, "get_flight_status", {"flight_number": "SK621", "flight_date": date}, "invalid_date_format")
    assert "YYYY-MM-DD" in result["message"]


def test_case_4_shape_only_date_passes(session: ToolSession) -> None:
    expect_error(session, "get_flight_status", {"flight_number": "SK621", "flight_date": "2026-13-45"}, "not_found")


@pytest.mark.parametrize("journey", ["SW200_20260320", "FL_20260320", "FL_SW200", "FL-SW200-20260320", "journey_123"])
def test_case_5_bad_journey_ids(session: ToolSession, journey: str) -> None:
    result = expect_error(session, "rebook_flight", {**REBOOK_1_1_2, "journey_id": journey}, "invalid_journey_id_format")
    assert "FL_" in result["message"]
    expect_error(session, "rebook_flight", {**REBOOK_1_1_2, "new_journey_id": journey}, "invalid_journey_id_format")


def test_case_5_connection_journey_id_accepted() -> None:
    session = ToolSession(initial_db("3.1.5"))
    params = {
        "confirmation_number": "M9M6FJ", "journey_id": "FL_SK715_SK330_20260908", "new_journey_id": "FL_SK907_20260908",
        "rebooking_type": "voluntary", "waive_change_fee": False,
    }
    assert execute_tool(session, "rebook_flight", params)["status"] == "success"


@pytest.mark.parametrize("pax", ["001", "PASSENGER1", "PAX", "pax001", "PAX001 "])
def test_case_6_bad_passenger_id(session: ToolSession, pax: str) -> None:
    params = {"confirmation_number": "ZK3FFW", "passenger_id": pax, "journey_id": "FL_SK621_20260320", "seat_preference": "window"}
    result = expect_error(session, "assign_seat", params, "invalid_passenger_id_format")
    assert "PAX" in result["message"]


@pytest.mark.parametrize("ids", [["INVALID"], "PAX001", ["PAX001", 7], None])
def test_case_6_bad_standby_passenger_ids(session: ToolSession, ids: object) -> None:
    params = {"confirmation_number": "ZK3FFW", "journey_id": "FL_SK703_20260325", "passenger_ids": ids}
    expect_error(session, "add_to_standby", params, "invalid_passenger_id_format")


@pytest.mark.parametrize("field,value", [("origin", "JF"), ("origin", "JFKK"), ("origin", "123"), ("origin", "J F"), ("destination", "LA")])
def test_case_7_bad_airport_codes(session: ToolSession, field: str, value: str) -> None:
    result = expect_error(session, "search_rebooking_options", {**SEARCH_1_1_2, field: value}, "invalid_airport_code_format")
    assert "3-letter" in result["message"]


@pytest.mark.parametrize("count", [0, -1, 1.5, "abc", None, "1.5"])
def test_case_7_bad_passenger_count(session: ToolSession, count: object) -> None:
    result = expect_error(session, "search_rebooking_options", {**SEARCH_1_1_2, "passenger_count": count}, "invalid_parameter")
    assert "passenger_count" in result["message"]


@pytest.mark.parametrize("count", ["1", " 1 ", "1.0", 1.0, True])
def test_case_7_lax_passenger_count(session: ToolSession, count: object) -> None:
    result = execute_tool(session, "search_rebooking_options", {**SEARCH_1_1_2, "passenger_count": count})
    assert result["status"] == "success" and result["count"] == 5


def test_case_7_bad_fare_class(session: ToolSession) -> None:
    result = expect_error(session, "search_rebooking_options", {**SEARCH_1_1_2, "fare_class": "economy"}, "invalid_fare_class")
    assert "'any'" in result["message"]
    expect_error(session, "search_rebooking_options", {**SEARCH_1_1_2, "fare_class": "Main_Cabin"}, "invalid_fare_class")


def test_case_8_empty_optional_strings_are_not_omitted(session: ToolSession) -> None:
    expect_error(session, "rebook_flight", {**REBOOK_1_1_2, "flight_number": ""}, "invalid_flight_number_format")
    expect_error(session, "rebook_flight", {**REBOOK_1_1_2, "new_fare_class": ""}, "invalid_fare_class")
    result = execute_tool(session, "rebook_flight", {**REBOOK_1_1_2, "flight_number": None, "new_fare_class": None})
    assert result["status"] == "success" and "partial_rebook" not in result


@pytest.mark.parametrize("waive", ["no", 1, "off", "YES", "t", 0, "0", True])
def test_case_9_lax_booleans_accepted(session: ToolSession, waive: object) -> None:
    result = execute_tool(session, "rebook_flight", {**REBOOK_1_1_2, "waive_change_fee": waive})
    assert result["status"] == "success"


@pytest.mark.parametrize("waive", ["maybe", 2, None, "", [], "true "])
def test_case_9_bad_booleans(session: ToolSession, waive: object) -> None:
    result = expect_error(session, "rebook_flight", {**REBOOK_1_1_2, "waive_change_fee": waive}, "invalid_parameter")
    assert "waive_change_fee" in result["message"]


def test_case_9_missing_boolean_and_bad_rebooking_type(session: ToolSession) -> None:
    params = dict(REBOOK_1_1_2)
    del params["waive_change_fee"]
    expect_error(session, "rebook_flight", params, "invalid_parameter")
    expect_error(session, "rebook_flight", {**REBOOK_1_1_2, "rebooking_type": "IRROPS"}, "invalid_rebooking_type")


def test_case_10_first_mapped_failure_wins(session: ToolSession) -> None:
    params = {"origin": "J1K", "destination": "LAX", "date": "2026/03/25", "passenger_count": "lots", "fare_class": "eco"}
    expect_error(session, "search_rebooking_options", params, "invalid_airport_code_format")
    # An unmapped failure earlier in the order loses to a later mapped one.
    params = {"confirmation_number": "ZK3FFW", "refund_amount": -5, "refund_type": "everything"}
    expect_error(session, "process_refund", params, "invalid_refund_type")
    params = {"confirmation_number": "ZK3FFW", "transfer_reason": 5, "issue_summary": None}
    result = expect_error(session, "transfer_to_agent", params, "invalid_parameter")
    assert "transfer_reason" in result["message"]


def test_mapped_messages_quote_value_and_hint(session: ToolSession) -> None:
    result = expect_error(session, "get_flight_status", {"flight_number": "X", "flight_date": "2026-03-20"}, "invalid_flight_number_format")
    assert result["message"].startswith("Invalid flight_number 'X'")
    result = expect_error(session, "get_flight_status", {"flight_number": "SK621", "flight_date": 5}, "invalid_date_format")
    assert "YYYY-MM-DD" in result["message"]
    params = {"confirmation_number": "ZK3FFW", "journey_id": "FL_SK621_20260320", "num_bags": 9}
    result = expect_error(session, "add_baggage_allowance", params, "invalid_bag_count")
    assert "'9'" in result["message"]


def test_unknown_extra_parameters_ignored(session: ToolSession) -> None:
    result = execute_tool(session, "get_reservation", {"confirmation_number": "ZK3FFW", "last_name": "Rodriguez", "x": [1]})
    assert result["status"] == "success"


@pytest.mark.parametrize("value,expected", [
    (2, 2), (2.0, 2), ("2", 2), (" 2 ", 2), ("2.0", 2), (True, 1), (False, 0), ("-3", -3),
])
def test_lax_integer_accepts(value: object, expected: int) -> None:
    ok, out = as_integer(value)
    assert ok and out == expected and type(out) is int


@pytest.mark.parametrize("value", [2.5, "2.5", "two", "", None, [2], float("nan"), float("inf"), "1e2"])
def test_lax_integer_rejects(value: object) -> None:
    assert as_integer(value)[0] is False


@pytest.mark.parametrize("value,expected", [(50, 50.0), ("50", 50.0), ("1e2", 100.0), (True, 1.0), (" 2.5 ", 2.5), (74.98, 74.98)])
def test_lax_number_accepts(value: object, expected: float) -> None:
    ok, out = as_number(value)
    assert ok and out == expected and type(out) is float


@pytest.mark.parametrize("value", ["abc", None, [], {}, "nan", "inf", float("nan"), 10**400, "1_0"])
def test_lax_number_rejects(value: object) -> None:
    assert as_number(value)[0] is False


@pytest.mark.parametrize("value,expected", [
    (True, True), (0, False), (1, True), ("TRUE", True), ("No", False), ("on", True), ("OFF", False),
    ("1", True), ("0", False), ("t", True), ("F", False), ("y", True), ("n", False),
])
def test_lax_boolean_accepts(value: object, expected: bool) -> None:
    assert as_boolean(value) == (True, expected)


@pytest.mark.parametrize("value", [None, 2, -1, "maybe", "", [], " yes"])
def test_lax_boolean_rejects(value: object) -> None:
    assert as_boolean(value)[0] is False


@pytest.mark.parametrize("value", [123456, None, 1.5, True, ["a"], {"a": 1}])
def test_strings_are_never_converted(value: object) -> None:
    assert as_string(value)[0] is False


def test_amount_stored_as_float_and_positive() -> None:
    session = ToolSession(initial_db("5.1.5"))
    params = {"confirmation_number": "HEEWRM", "passenger_id": "PAX001", "amount": 50, "credit_reason": "goodwill"}
    assert execute_tool(session, "issue_travel_credit", params)["amount"] == 50.0
    assert type(session.db["travel_credits"]["TCHEEWRMPAX"]["amount"]) is float
    for bad in (0, -1, "0", "free"):
        expect_error(session, "issue_travel_credit", {**params, "amount": bad}, "invalid_parameter")
