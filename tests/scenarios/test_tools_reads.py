"""The four read tools (tools.md §3.1–§3.4, §9 cases 11–17 and 52)."""
from __future__ import annotations

import copy

import pytest

from scenarios.data_root import dataset_index, initial_db
from scenarios.domains.eva_airline.tools import ToolSession, execute_tool, result_status
from scoring.core.canonical import db_hash


def expect_error(session: ToolSession, tool: str, params: dict, error_type: str) -> dict:
    """Call, assert the error type, and assert nothing moved."""
    db_before, actions_before = copy.deepcopy(session.db), list(session.actions)
    result = execute_tool(session, tool, params)
    assert result_status(result) == ("error", error_type), result
    assert session.db == db_before and session.actions == actions_before
    return result


def test_case_11_get_reservation_case_insensitive() -> None:
    session = ToolSession(initial_db("1.1.2"))
    before = db_hash(session.db)
    result = execute_tool(session, "get_reservation", {"confirmation_number": "zk3ffw", "last_name": "RODRIGUEZ"})
    assert result["status"] == "success"
    assert result["reservation"]["confirmation_number"] == "ZK3FFW"
    assert db_hash(session.db) == before and session.actions == []
    # Project decision (§5): upstream's session marker is written.
    assert session.db["session"] == {"confirmation_number": "ZK3FFW", "last_name": "rodriguez"}


def test_case_11_result_is_a_snapshot() -> None:
    session = ToolSession(initial_db("1.1.2"))
    result = execute_tool(session, "get_reservation", {"confirmation_number": "ZK3FFW", "last_name": "Rodriguez"})
    result["reservation"]["bookings"][0]["status"] = "mutated"
    assert session.db["reservations"]["ZK3FFW"]["bookings"][0]["status"] == "confirmed"


def test_case_12_authentication_paths() -> None:
    session = ToolSession(initial_db("1.1.2"))
    expect_error(session, "get_reservation", {"confirmation_number": "ZK3FFW", "last_name": "Smith"}, "authentication_failed")
    expect_error(session, "get_reservation", {"confirmation_number": "ZK3FFW", "last_name": " Rodriguez"}, "authentication_failed")
    result = expect_error(session, "get_reservation", {"confirmation_number": "XXXXXX", "last_name": "Rodriguez"}, "not_found")
    assert "XXXXXX" in result["message"]
    assert "session" not in session.db
    result = execute_tool(session, "get_reservation", {"confirmation_number": "ZK3FFW", "last_name": ""})
    assert result["status"] == "success"  # documented loophole (§10.8)
    assert session.db["session"] == {"confirmation_number": "ZK3FFW", "last_name": ""}


def test_case_13_bookings_sorted_in_result_only() -> None:
    db = initial_db("1.1.4")
    bookings = db["reservations"]["KOLTSF"]["bookings"]
    bookings.reverse()
    stored_order = [bk["journey_id"] for bk in bookings]
    assert stored_order == ["FL_SK890_20260820", "FL_SK801_20260814"]
    session = ToolSession(db)
    result = execute_tool(session, "get_reservation", {"confirmation_number": "KOLTSF", "last_name": ""})
    assert [bk["journey_id"] for bk in result["reservation"]["bookings"]] == ["FL_SK801_20260814", "FL_SK890_20260820"]
    assert [bk["journey_id"] for bk in session.db["reservations"]["KOLTSF"]["bookings"]] == stored_order


def test_case_14_flight_status_direct_and_second_leg() -> None:
    session = ToolSession(initial_db("1.1.2"))
    result = execute_tool(session, "get_flight_status", {"flight_number": "sk621", "flight_date": "2026-03-20"})
    assert result["status"] == "success" and result["journey"]["journey_id"] == "FL_SK621_20260320"
    leg = {"flight_number": "XY22", "segment_number": 2}
    db = {
        "_current_date": "2026-01-01",
        "journeys": {
            "FL_AB11_20260102": {"journey_id": "FL_AB11_20260102", "date": "2026-01-02", "segments": [{"flight_number": "AB11"}]},
            "FL_AB11_XY22_20260101": {
                "journey_id": "FL_AB11_XY22_20260101", "date": "2026-01-01",
                "segments": [{"flight_number": "AB11", "segment_number": 1}, leg],
            },
        },
    }
    session = ToolSession(db)
    result = execute_tool(session, "get_flight_status", {"flight_number": "xy22", "flight_date": "2026-01-01"})
    assert result["journey"]["journey_id"] == "FL_AB11_XY22_20260101"
    result = expect_error(session, "get_flight_status", {"flight_number": "xy22", "flight_date": "2026-01-02"}, "not_found")
    assert "xy22" in result["message"] and "2026-01-02" in result["message"]


def test_case_15_disruption_info() -> None:
    session = ToolSession(initial_db("2.1.2"))
    result = execute_tool(session, "get_disruption_info", {"flight_number": "sk518", "date": "2026-06-07"})
    assert result["status"] == "success"
    assert result["disruption"]["is_irrops"] is True
    assert result["disruption"]["passenger_entitled_to"]["hotel_accommodation"] is True
    result = expect_error(session, "get_disruption_info", {"flight_number": "SK518", "date": "2026-06-08"}, "not_found")
    assert "SK518" in result["message"]


def _search(session: ToolSession, **overrides: object) -> dict:
    params = {"origin": "AUS", "destination": "LAX", "date": "2026-03-25", "passenger_count": 1, "fare_class": "main_cabin"}
    return execute_tool(session, "search_rebooking_options", {**params, **overrides})


def test_case_16_search_order_and_fares() -> None:
    session = ToolSession(initial_db("1.1.2"))
    result = _search(session)
    assert result["count"] == 5 and result["message"] == "5 flight(s) found"
    summary = [(o["journey_id"], o["departure_time"], o["fare"]) for o in result["options"]]
    assert summary == [
        ("FL_SK703_20260325", "08:15", 300), ("FL_SK715_20260325", "10:40", 455), ("FL_SK739_20260325", "13:45", 340),
        ("FL_SK781_20260325", "14:35", 520), ("FL_SK809_20260325", "16:10", 290),
    ]
    option = result["options"][0]
    assert set(option) == {
        "journey_id", "origin", "destination", "num_stops", "total_duration_minutes", "segments", "departure_time",
        "arrival_time", "available_seats", "fare",
    }
    assert set(option["available_seats"]) == {"basic_economy", "main_cabin", "premium_economy", "business", "first"}
    assert "fares" in option["segments"][0] and "available_seat_types" in option["segments"][0]
    assert [o["fare"] for o in _search(session, fare_class="any", origin="aus", destination="lax")["options"]] == [
        199, 205, 215, 195, 185,
    ]


def test_case_17_search_exclusions() -> None:
    session = ToolSession(initial_db("1.1.3"))
    journey = session.db["journeys"]["FL_SK371_20260603"]
    assert journey["bookable"] is False
    result = _search(session, origin=journey["origin"], destination=journey["destination"], date=journey["date"])
    assert "FL_SK371_20260603" not in [o["journey_id"] for o in result["options"]]

    db = initial_db("1.1.2")
    db["journeys"]["FL_SK703_20260325"]["status"] = "cancelled"
    db["journeys"]["FL_SK715_20260325"]["bookable"] = False
    del db["journeys"]["FL_SK739_20260325"]["bookable"]  # missing counts as not bookable in search
    session = ToolSession(db)
    assert [o["journey_id"] for o in _search(session)["options"]] == ["FL_SK781_20260325", "FL_SK809_20260325"]
    empty = _search(session, origin="JFK")
    assert empty["status"] == "success" and empty["count"] == 0 and empty["options"] == []
    assert _search(session, passenger_count=1000)["count"] == 0
    assert _search(session, passenger_count=1000, fare_class="any")["count"] == 0


def _read_calls(db: dict) -> list[tuple[str, dict]]:
    """Every read a careful agent could make on this fixture."""
    calls: list[tuple[str, dict]] = []
    for conf, res in db["reservations"].items():
        calls.append(("get_reservation", {"confirmation_number": conf.lower(), "last_name": res["passengers"][0]["last_name"]}))
        calls.append(("get_reservation", {"confirmation_number": conf, "last_name": "Nobody"}))
        for bk in res["bookings"]:
            journey = db["journeys"].get(bk["journey_id"], {})
            for seg in bk["segments"]:
                calls.append(("get_flight_status", {"flight_number": seg["flight_number"], "flight_date": seg["date"]}))
                calls.append(("get_disruption_info", {"flight_number": seg["flight_number"], "date": seg["date"]}))
            if journey:
                for fare_class in ("any", bk["fare_class"]):
                    calls.append(("search_rebooking_options", {
                        "origin": journey["origin"], "destination": journey["destination"], "date": journey["date"],
                        "passenger_count": 1, "fare_class": fare_class,
                    }))
    return calls


@pytest.mark.parametrize("eva_id", sorted(dataset_index()))
def test_case_52_reads_leave_hash_unchanged(eva_id: str) -> None:
    session = ToolSession(initial_db(eva_id))
    before = db_hash(session.db)
    for tool, params in _read_calls(session.db):
        result = execute_tool(session, tool, params)
        assert result_status(result)[0] == "success" or result["error_type"] in {"not_found", "authentication_failed"}
    assert db_hash(session.db) == before
    assert session.actions == [] and session.counters == {}
    stripped = {k: v for k, v in session.db.items() if k != "session"}
    assert stripped == initial_db(eva_id)
