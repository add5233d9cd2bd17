"""Write and system tools (tools.md §3.5–§3.15, §4; §9 cases 18–51, 53 and 56)."""
from __future__ import annotations

import copy

import pytest

from scenarios.data_root import expected_db, initial_db
from scenarios.domains.eva_airline.tools import ToolSession, execute_tool, result_status
from scoring.core.canonical import db_hash

ZK = "ZK3FFW"
OLD_1_1_2, SK703 = "FL_SK621_20260320", "FL_SK703_20260325"
SAMPLE_CONF, SAMPLE_OLD, SAMPLE_NEW = "SMPL01", "FL_SW300_SW400_20260322", "FL_SW350_20260322"


def ok(session: ToolSession, tool: str, **params: object) -> dict:
    result = execute_tool(session, tool, params)
    assert result_status(result) == ("success", None), result
    return result


def expect_error(session: ToolSession, tool: str, error_type: str, **params: object) -> dict:
    """Call, assert the error type, and assert DB, counters, actions and end flag did not move."""
    before = (copy.deepcopy(session.db), dict(session.counters), list(session.actions), session.end_requested)
    hash_before = db_hash(session.db)
    result = execute_tool(session, tool, params)
    assert result_status(result) == ("error", error_type), result
    assert (session.db, session.counters, session.actions, session.end_requested) == before
    assert db_hash(session.db) == hash_before
    return result


def rebook(session: ToolSession, conf: str, old: str, new: str, rtype: str = "voluntary", **extra: object) -> dict:
    return ok(session, "rebook_flight", confirmation_number=conf, journey_id=old, new_journey_id=new,
              rebooking_type=rtype, waive_change_fee=extra.pop("waive_change_fee", False), **extra)


def bookings(session: ToolSession, conf: str) -> list[dict]:
    return session.db["reservations"][conf]["bookings"]


def seats(session: ToolSession, journey_id: str, fare_class: str = "main_cabin") -> list[int]:
    return [seg["available_seats"][fare_class] for seg in session.db["journeys"][journey_id]["segments"]]


def _flight(fn: str, origin: str, dest: str, dep: str, arr: str, fare: float, free: int) -> dict:
    return {
        "segment_number": 1, "flight_number": fn, "origin": origin, "destination": dest,
        "scheduled_departure": dep, "scheduled_arrival": arr, "status": "scheduled",
        "available_seats": {"basic_economy": free, "main_cabin": free, "premium_economy": 0, "business": 0, "first": 0},
        "available_seat_types": {"main_cabin": ["window", "aisle", "middle"]},
        "fares": {"basic_economy": None, "main_cabin": fare, "premium_economy": None, "business": None, "first": None},
    }


def sample_two_leg_db() -> dict:
    """The hand-built "sample 2-leg fixture" of tools.md §9."""
    def seg(fn: str, fare: float, seat: str) -> dict:
        return {"flight_number": fn, "date": "2026-03-22", "fare_paid": fare, "seat": seat, "bags_checked": 1,
                "meal_request": "vegetarian"}
    leg2 = {**_flight("SW400", "LAX", "ORD", "12:00", "18:00", 250.0, 9), "segment_number": 2}
    return {
        "_current_date": "2026-03-20",
        "reservations": {SAMPLE_CONF: {
            "confirmation_number": SAMPLE_CONF, "status": "confirmed", "fare_type": "non_refundable",
            "booking_date": "2026-03-01T10:00:00-05:00",
            "passengers": [{"passenger_id": "PAX001", "first_name": "Sam", "last_name": "Ple"}],
            "bookings": [{"journey_id": SAMPLE_OLD, "fare_class": "main_cabin", "fare_paid": 450.0, "status": "confirmed",
                          "segments": [seg("SW300", 200.0, "10A"), seg("SW400", 250.0, "12C")]}],
            "ancillaries": {"seat_selection_fee": 0.0, "bags_fee": 0.0},
        }},
        "journeys": {
            SAMPLE_OLD: {"journey_id": SAMPLE_OLD, "date": "2026-03-22", "origin": "SFO", "destination": "ORD",
                         "num_stops": 1, "status": "scheduled", "bookable": True,
                         "fares": {"main_cabin": 450.0},
                         "segments": [_flight("SW300", "SFO", "LAX", "08:00", "09:30", 200.0, 5), leg2]},
            SAMPLE_NEW: {"journey_id": SAMPLE_NEW, "date": "2026-03-22", "origin": "LAX", "destination": "ORD",
                         "num_stops": 0, "status": "scheduled", "bookable": True, "fares": {"main_cabin": 220.0},
                         "segments": [_flight("SW350", "LAX", "ORD", "13:00", "19:00", 220.0, 25)]},
        },
        "disruptions": {}, "travel_credits": {}, "meal_vouchers": {}, "refunds": {},
    }


# ---------------------------------------------------------------- rebook_flight

def test_case_18_voluntary_rebook() -> None:
    session = ToolSession(initial_db("1.1.2"))
    result = rebook(session, ZK, OLD_1_1_2, SK703)
    cost = result["cost_summary"]
    assert (cost["change_fee"], cost["fare_difference"], cost["total_collected"], cost["fee_waived"]) == (75, 40, 115, False)
    assert cost["credit_due"] == 0 and cost["cabin_changed"] is False
    assert result["message"] == f"Successfully rebooked to flight {SK703}"
    assert result["new_journey"]["journey_id"] == SK703 and result["new_journey"]["departure"] == "08:15"
    old, new = bookings(session, ZK)
    assert old["status"] == "cancelled" and old["segments"][0]["seat"] == "22A"
    assert new == {"journey_id": SK703, "fare_class": "main_cabin", "fare_paid": 300.0, "status": "confirmed",
                   "segments": [{"flight_number": "SK703", "date": "2026-03-25", "fare_paid": 300.0, "seat": None,
                                 "bags_checked": 0, "meal_request": None}]}
    assert session.db["reservations"][ZK]["status"] == "changed"
    assert seats(session, OLD_1_1_2) == [19] and seats(session, SK703) == [21]
    assert [a["action_type"] for a in session.actions] == ["rebook_flight"]
    assert session.actions[0]["partial_rebook"] is False and session.actions[0]["total_collected"] == 115
    seat = ok(session, "assign_seat", confirmation_number=ZK, passenger_id="PAX001", journey_id=SK703, seat_preference="window")
    assert seat["seat_assigned"] == "21A"
    assert db_hash(session.db) == db_hash(expected_db("1.1.2"))


@pytest.mark.parametrize("fare_class,rtype,waive,fee", [
    ("basic_economy", "same_day", False, 199), ("main_cabin", "same_day", False, 75), ("business", "same_day", False, 75),
    ("basic_economy", "voluntary", False, 75), ("business", "voluntary", False, 0),
    ("premium_economy", "missed_flight_passenger_fault", False, 75), ("first", "voluntary", False, 0),
])
def test_case_19_fee_table(fare_class: str, rtype: str, waive: bool, fee: int) -> None:
    db = initial_db("1.1.2")
    db["reservations"][ZK]["bookings"][0]["fare_class"] = fare_class
    db["journeys"][SK703]["fares"]["first"] = 2000.0
    db["journeys"][SK703]["segments"][0]["available_seats"]["first"] = 2
    session = ToolSession(db)
    assert rebook(session, ZK, OLD_1_1_2, SK703, rtype, waive_change_fee=waive)["cost_summary"]["change_fee"] == fee


def test_case_19_waiver_zeroes_only_the_fee() -> None:
    session = ToolSession(initial_db("1.1.2"))
    cost = rebook(session, ZK, OLD_1_1_2, SK703, "same_day", waive_change_fee=True)["cost_summary"]
    assert cost["change_fee"] == 0 and cost["fee_waived"] is True and cost["total_collected"] == 40


def test_case_20_irrops_keeps_old_fare() -> None:
    session = ToolSession(initial_db("2.1.1"))
    cost = rebook(session, "FAR0UM", "FL_SK302_20260414", "FL_SK410_20260414", "irrops_cancellation")["cost_summary"]
    assert (cost["change_fee"], cost["total_collected"], cost["fee_waived"], cost["fare_difference"]) == (0, 0, True, 30)
    new = bookings(session, "FAR0UM")[-1]
    assert new["fare_paid"] == 389 and new["segments"][0]["fare_paid"] == 389


def test_case_21_missed_connection_is_not_irrops() -> None:
    session = ToolSession(initial_db("1.1.2"))
    cost = rebook(session, ZK, OLD_1_1_2, SK703, "missed_connection_airline_fault")["cost_summary"]
    assert cost["change_fee"] == 75 and cost["fee_waived"] is False
    assert bookings(session, ZK)[-1]["fare_paid"] == 300


def test_case_22_rebook_error_paths() -> None:
    session = ToolSession(initial_db("1.1.2"))
    base = {"confirmation_number": ZK, "journey_id": OLD_1_1_2, "new_journey_id": SK703, "rebooking_type": "voluntary",
            "waive_change_fee": False}
    expect_error(session, "rebook_flight", "flight_not_found", **{**base, "new_journey_id": "FL_SK999_20260325"})
    result = expect_error(session, "rebook_flight", "fare_class_not_available", **{**base, "new_fare_class": "first"})
    assert "'first'" in result["message"]
    expect_error(session, "rebook_flight", "fare_class_not_available",
                 **{**base, "new_journey_id": "FL_SK781_20260325", "new_fare_class": "business"})
    expect_error(session, "rebook_flight", "not_found", **{**base, "confirmation_number": "QQQQQQ"})
    expect_error(session, "rebook_flight", "journey_not_found", **{**base, "journey_id": "FL_SK622_20260320"})
    session = ToolSession(initial_db("2.1.2"))
    base = {"confirmation_number": "PP248Z", "journey_id": "FL_SK518_20260607", "rebooking_type": "irrops_cancellation",
            "waive_change_fee": False}
    expect_error(session, "rebook_flight", "no_seats_available", **{**base, "new_journey_id": "FL_SK612_20260608"})
    expect_error(session, "rebook_flight", "not_bookable", **{**base, "new_journey_id": "FL_SK901_20260608"})


def test_case_23_bags_and_meal_carry_over() -> None:
    session = ToolSession(initial_db("1.1.4"))
    old, new = "FL_SK890_20260820", "FL_SK900_20260823"
    rebook(session, "KOLTSF", old, new)
    segment = bookings(session, "KOLTSF")[-1]["segments"][0]
    assert segment["bags_checked"] == 1 and segment["seat"] is None and segment["meal_request"] is None

    session = ToolSession(initial_db("1.1.4"))
    ok(session, "add_meal_request", confirmation_number="KOLTSF", passenger_id="PAX001", journey_id=old, meal_type="vegetarian")
    rebook(session, "KOLTSF", old, new)
    assert bookings(session, "KOLTSF")[-1]["segments"][0]["meal_request"] == "vegetarian"
    ok(session, "add_meal_request", confirmation_number="KOLTSF", passenger_id="PAX001", journey_id=new, meal_type="standard")
    assert bookings(session, "KOLTSF")[-1]["segments"][0]["meal_request"] == "standard"


def test_case_24_two_legs_onto_one_and_back() -> None:
    session = ToolSession(initial_db("3.1.5"))
    two_leg, sk907 = "FL_SK715_SK330_20260908", "FL_SK907_20260908"
    assert seats(session, two_leg) == [0, 4] and seats(session, sk907) == [7]
    cost = rebook(session, "M9M6FJ", two_leg, sk907)["cost_summary"]
    assert (cost["change_fee"], cost["fare_difference"], cost["total_collected"]) == (75, 145, 220)
    new = bookings(session, "M9M6FJ")[-1]
    assert [(s["flight_number"], s["bags_checked"], s["fare_paid"]) for s in new["segments"]] == [("SK907", 1, 465)]
    assert seats(session, two_leg) == [1, 5] and seats(session, sk907) == [6]
    # Reverse: one leg onto two; both new legs carry the single old segment's bags.
    session.db["journeys"][two_leg]["bookable"] = True
    rebook(session, "M9M6FJ", sk907, two_leg)
    back = bookings(session, "M9M6FJ")[-1]
    assert [(s["flight_number"], s["bags_checked"], s["seat"]) for s in back["segments"]] == [("SK715", 1, None), ("SK330", 1, None)]
    assert [s["date"] for s in back["segments"]] == ["2026-09-08", "2026-09-08"]


def test_case_25_partial_rebook() -> None:
    session = ToolSession(sample_two_leg_db())
    original = copy.deepcopy(bookings(session, SAMPLE_CONF)[0])
    result = rebook(session, SAMPLE_CONF, SAMPLE_OLD, SAMPLE_NEW, flight_number="SW300")
    cost = result["cost_summary"]
    assert result["partial_rebook"] is True
    assert (cost["fare_difference"], cost["change_fee"], cost["total_collected"]) == (20, 75, 95)
    assert result["replaced_segment"] == {"flight_number": "SW300", "origin": None, "destination": None, "fare_paid": 200}
    assert result["kept_segments"] == [{"flight_number": "SW400", "origin": None, "destination": None, "fare_paid": 250, "seat": "12C"}]
    first, new, kept = bookings(session, SAMPLE_CONF)
    assert first == {**original, "status": "cancelled"}
    assert new == {"journey_id": SAMPLE_NEW, "fare_class": "main_cabin", "fare_paid": 220.0, "status": "confirmed",
                   "segments": [{"flight_number": "SW350", "date": "2026-03-22", "fare_paid": 220.0, "seat": None,
                                 "bags_checked": 1, "meal_request": "vegetarian"}]}
    assert kept == {"journey_id": SAMPLE_OLD, "fare_class": "main_cabin", "fare_paid": 250.0, "status": "confirmed",
                    "segments": [original["segments"][1]]}
    assert seats(session, SAMPLE_OLD) == [6, 10] and seats(session, SAMPLE_NEW) == [24]
    assert session.actions[-1]["partial_rebook"] is True and session.actions[-1]["replaced_flight_number"] == "SW300"


def test_case_26_partial_irrops_and_unknown_leg() -> None:
    session = ToolSession(sample_two_leg_db())
    result = rebook(session, SAMPLE_CONF, SAMPLE_OLD, SAMPLE_NEW, "irrops_delay", flight_number="SW300")
    new = bookings(session, SAMPLE_CONF)[1]
    assert new["fare_paid"] == 200 and new["segments"][0]["fare_paid"] == 200
    assert result["cost_summary"]["total_collected"] == 0 and result["cost_summary"]["fare_difference"] == 20
    session = ToolSession(sample_two_leg_db())
    result = expect_error(session, "rebook_flight", "flight_not_found", confirmation_number=SAMPLE_CONF, journey_id=SAMPLE_OLD,
                          new_journey_id=SAMPLE_NEW, rebooking_type="irrops_delay", waive_change_fee=False, flight_number="SW999")
    assert "SW999" in result["message"]
    # Flight numbers are matched verbatim outside the status tools (§10.12).
    expect_error(session, "rebook_flight", "flight_not_found", confirmation_number=SAMPLE_CONF, journey_id=SAMPLE_OLD,
                 new_journey_id=SAMPLE_NEW, rebooking_type="voluntary", waive_change_fee=False, flight_number="sw300")


def test_case_27_downgrade() -> None:
    session = ToolSession(initial_db("7.2.1"))
    old, new = "FL_SK445_20260415", "FL_SK451_20260415"
    assert seats(session, new, "basic_economy") == [2] and seats(session, old) == [0]
    result = rebook(session, "BZIW48", old, new, new_fare_class="basic_economy")
    cost = result["cost_summary"]
    assert cost["cabin_changed"] is True and result["message"].endswith(" in basic_economy")
    assert (cost["change_fee"], cost["fare_difference"]) == (75, 20)
    booking = bookings(session, "BZIW48")[-1]
    assert (booking["fare_class"], booking["fare_paid"], booking["segments"][0]["bags_checked"]) == ("basic_economy", 180, 1)
    assert seats(session, new, "basic_economy") == [1] and seats(session, old) == [1]
    seat = ok(session, "assign_seat", confirmation_number="BZIW48", passenger_id="PAX001", journey_id=new, seat_preference="aisle")
    assert seat["seat_assigned"] == "26C"


def test_case_28_cheaper_flight_gives_credit_due() -> None:
    session = ToolSession(initial_db("1.1.2"))
    cost = rebook(session, ZK, OLD_1_1_2, SK703, new_fare_class="basic_economy")["cost_summary"]
    assert cost["fare_difference"] == 199 - 260 and cost["credit_due"] == 61 and cost["total_collected"] == 75
    assert bookings(session, ZK)[-1]["fare_paid"] == 199


# ---------------------------------------------------------------- cancel_reservation

def _cancel(session: ToolSession, conf: str, journey_id: str, reason: str = "voluntary") -> dict:
    return ok(session, "cancel_reservation", confirmation_number=conf, journey_id=journey_id, cancellation_reason=reason)


def test_case_29_non_refundable_cancel() -> None:
    session = ToolSession(initial_db("5.1.5"))
    assert seats(session, "FL_SK411_20260727") == [18]
    result = _cancel(session, "HEEWRM", "FL_SK411_20260727")
    assert (result["is_refundable"], result["cancellation_fee"], result["refund_amount_eligible"],
            result["credit_amount_eligible"]) == (False, 100, 0, 188)
    assert result["reservation_status"] == "active"
    assert session.db["reservations"]["HEEWRM"]["status"] == "confirmed"
    assert seats(session, "FL_SK411_20260727") == [19]
    assert session.db["refunds"] == {} and session.db["travel_credits"] == {}
    assert session.actions[-1]["action_type"] == "cancel_reservation" and session.actions[-1]["cancellation_reason"] == "voluntary"


def test_case_30_refundable_cancels() -> None:
    session = ToolSession(initial_db("2.1.6"))
    result = _cancel(session, "YLCNSG", "FL_SK490_20260910", "irrops_refund")
    assert (result["is_refundable"], result["refund_amount_eligible"], result["credit_amount_eligible"]) == (True, 289, 0)
    assert result["reservation_status"] == "cancelled" and session.db["reservations"]["YLCNSG"]["status"] == "cancelled"
    session = ToolSession(initial_db("5.1.1"))
    assert _cancel(session, "8JVSDF", "FL_SK642_20260520")["refund_amount_eligible"] == 1285
    session = ToolSession(initial_db("5.1.5"))  # non-refundable fare, booking_date never checked
    result = _cancel(session, "HEEWRM", "FL_SK411_20260727", "24_hour_rule")
    assert result["is_refundable"] is True and result["cancellation_fee"] == 0 and result["refund_amount_eligible"] == 288


def test_case_31_already_cancelled() -> None:
    session = ToolSession(initial_db("5.1.5"))
    _cancel(session, "HEEWRM", "FL_SK411_20260727")
    expect_error(session, "cancel_reservation", "already_cancelled", confirmation_number="HEEWRM",
                 journey_id="FL_SK411_20260727", cancellation_reason="medical")


def test_case_32_cancel_after_partial_rebook_hits_kept_booking() -> None:
    session = ToolSession(sample_two_leg_db())
    rebook(session, SAMPLE_CONF, SAMPLE_OLD, SAMPLE_NEW, flight_number="SW300")
    result = _cancel(session, SAMPLE_CONF, SAMPLE_OLD)
    assert result["credit_amount_eligible"] == 150 and result["reservation_status"] == "active"
    assert [bk["status"] for bk in bookings(session, SAMPLE_CONF)] == ["cancelled", "confirmed", "cancelled"]
    assert seats(session, SAMPLE_OLD) == [7, 11]  # seat leak kept on purpose (§10.3)
    expect_error(session, "cancel_reservation", "already_cancelled", confirmation_number=SAMPLE_CONF,
                 journey_id=SAMPLE_OLD, cancellation_reason="voluntary")


def test_case_33_rebook_then_cancel_new_booking() -> None:
    session = ToolSession(initial_db("2.1.1"))
    before = seats(session, "FL_SK410_20260414")
    rebook(session, "FAR0UM", "FL_SK302_20260414", "FL_SK410_20260414", "irrops_cancellation")
    result = _cancel(session, "FAR0UM", "FL_SK410_20260414", "irrops_refund")
    assert result["refund_amount_eligible"] == 389
    assert seats(session, "FL_SK410_20260414") == before


# ---------------------------------------------------------------- process_refund and counters

def _refund(session: ToolSession, conf: str, amount: object = 289, refund_type: str = "full_fare") -> dict:
    return execute_tool(session, "process_refund", {"confirmation_number": conf, "refund_amount": amount, "refund_type": refund_type})


def test_case_34_two_refunds() -> None:
    session = ToolSession(initial_db("2.1.6"))
    assert _refund(session, "ylcnsg")["refund_id"] == "REF-YLCNSG-001"
    second = _refund(session, "YLCNSG", "69", "ancillary_fees")
    assert second["refund_id"] == "REF-YLCNSG-002" and second["processing_days"] == 7
    for refund_id, amount in (("REF-YLCNSG-001", 289.0), ("REF-YLCNSG-002", 69.0)):
        stored = session.db["refunds"][refund_id]
        assert stored["processing_days"] == 7 and stored["status"] == "processing"
        assert stored["initiated_date"] == "2026-09-10" and stored["refund_amount"] == amount
        assert type(stored["refund_amount"]) is float
    assert "refund_id" not in session.actions[0] and session.actions[0]["refund_amount"] == 289.0


def test_case_35_failed_refunds_do_not_consume_numbers() -> None:
    session = ToolSession(initial_db("2.1.6"))
    assert _refund(session, "YLCNSG")["refund_id"] == "REF-YLCNSG-001"
    expect_error(session, "process_refund", "invalid_refund_type", confirmation_number="YLCNSG", refund_amount=5, refund_type="full")
    expect_error(session, "process_refund", "not_found", confirmation_number="NOPE00", refund_amount=5, refund_type="full_fare")
    expect_error(session, "process_refund", "invalid_parameter", confirmation_number="YLCNSG", refund_amount=-50, refund_type="full_fare")
    expect_error(session, "process_refund", "invalid_parameter", confirmation_number="YLCNSG", refund_amount=0, refund_type="full_fare")
    assert _refund(session, "YLCNSG")["refund_id"] == "REF-YLCNSG-002"


def test_case_36_counter_is_per_tool_not_per_reservation() -> None:
    db = initial_db("2.1.6")
    other = copy.deepcopy(db["reservations"]["YLCNSG"])
    other["confirmation_number"] = "BBBBBB"
    db["reservations"]["BBBBBB"] = other
    session = ToolSession(db)
    assert _refund(session, "YLCNSG")["refund_id"] == "REF-YLCNSG-001"
    assert _refund(session, "BBBBBB")["refund_id"] == "REF-BBBBBB-002"
    assert _refund(ToolSession(initial_db("2.1.6")), "YLCNSG")["refund_id"] == "REF-YLCNSG-001"


def test_counter_padding_beyond_three_digits() -> None:
    session = ToolSession(initial_db("2.1.6"))
    session.counters["process_refund"] = 999
    assert _refund(session, "YLCNSG")["refund_id"] == "REF-YLCNSG-1000"


# ---------------------------------------------------------------- assign_seat

def _seat(session: ToolSession, pref: str, pax: str = "PAX001", conf: str = ZK, journey: str = OLD_1_1_2, **extra: object) -> dict:
    return execute_tool(session, "assign_seat", {"confirmation_number": conf, "passenger_id": pax, "journey_id": journey,
                                                 "seat_preference": pref, **extra})


@pytest.mark.parametrize("fare_class,pax,pref,seat", [
    ("main_cabin", "PAX001", "window", "21A"), ("main_cabin", "PAX001", "middle", "21B"),
    ("main_cabin", "PAX001", "aisle", "21C"), ("main_cabin", "PAX001", "no_preference", "21C"),
    ("business", "PAX001", "window", "6A"), ("first", "PAX001", "aisle", "2C"), ("basic_economy", "PAX001", "middle", "26B"),
    ("premium_economy", "PAX001", "window", "11A"), ("main_cabin", "PAX123", "aisle", "143C"), ("unknown", "PAX002", "aisle", "22C"),
])
def test_case_37_seat_formula(fare_class: str, pax: str, pref: str, seat: str) -> None:
    db = initial_db("1.1.2")
    db["reservations"][ZK]["bookings"][0]["fare_class"] = fare_class
    leg = db["journeys"][OLD_1_1_2]["segments"][0]
    leg["available_seats"] = {cls: 3 for cls in ("basic_economy", "main_cabin", "premium_economy", "business", "first", "unknown")}
    leg["available_seat_types"] = {}  # empty map: every type allowed
    session = ToolSession(db)
    inventory = copy.deepcopy(leg["available_seats"])
    result = _seat(session, pref, pax)
    assert result["status"] == "success" and result["seat_assigned"] == seat
    assert result["flight_number"] == "SK621" and result["fare_class"] == fare_class
    assert db["reservations"][ZK]["bookings"][0]["segments"][0]["seat"] == seat
    assert leg["available_seats"] == inventory


def test_case_38_seat_type_unavailable_after_rebook() -> None:
    session = ToolSession(initial_db("1.1.2"))
    rebook(session, ZK, OLD_1_1_2, "FL_SK739_20260325")
    before = db_hash(session.db)
    result = _seat(session, "window", journey="FL_SK739_20260325")
    assert result["error_type"] == "seat_type_unavailable" and "Available types: aisle, middle" in result["message"]
    assert db_hash(session.db) == before and len(session.actions) == 1
    assert _seat(session, "aisle", journey="FL_SK739_20260325")["seat_assigned"] == "21C"


def test_case_39_multi_leg_seat_needs_flight_number() -> None:
    session = ToolSession(initial_db("3.1.5"))
    journey = "FL_SK715_SK330_20260908"
    expect_error(session, "assign_seat", "flight_number_required", confirmation_number="M9M6FJ", passenger_id="PAX001",
                 journey_id=journey, seat_preference="window")
    expect_error(session, "assign_seat", "flight_not_found", confirmation_number="M9M6FJ", passenger_id="PAX001",
                 journey_id=journey, seat_preference="window", flight_number="SK999")
    result = _seat(session, "window", conf="M9M6FJ", journey=journey, flight_number="SK330")
    assert result["seat_assigned"] == "21A" and session.actions[-1]["flight_number"] == "SK330"
    assert [s["seat"] for s in bookings(session, "M9M6FJ")[0]["segments"]] == ["22C", "21A"]


def test_case_40_seat_needs_free_inventory() -> None:
    session = ToolSession(initial_db("3.1.5"))
    expect_error(session, "assign_seat", "no_seats_available", confirmation_number="M9M6FJ", passenger_id="PAX001",
                 journey_id="FL_SK715_SK330_20260908", seat_preference="aisle", flight_number="SK715")


def test_seat_with_short_passenger_id_is_execution_error() -> None:
    session = ToolSession(initial_db("1.1.2"))
    expect_error(session, "assign_seat", "execution_error", confirmation_number=ZK, passenger_id="PAX12",
                 journey_id=OLD_1_1_2, seat_preference="aisle")


# ---------------------------------------------------------------- baggage and meals

def test_case_41_baggage() -> None:
    session = ToolSession(initial_db("3.1.5"))
    journey, conf = "FL_SK715_SK330_20260908", "M9M6FJ"
    fees = copy.deepcopy(session.db["reservations"][conf]["ancillaries"])
    for bad in (6, -1, "7", 2.5):
        expect_error(session, "add_baggage_allowance", "invalid_bag_count", confirmation_number=conf, journey_id=journey, num_bags=bad)
    for good in ("2", 2.0):
        result = ok(session, "add_baggage_allowance", confirmation_number=conf, journey_id=journey, num_bags=good)
        assert result["bags_checked"] == 2 and result["message"] == "Baggage allowance set to 2 checked bag(s)"
        assert [type(s["bags_checked"]) for s in bookings(session, conf)[0]["segments"]] == [int, int]
    assert [s["bags_checked"] for s in bookings(session, conf)[0]["segments"]] == [2, 2]
    ok(session, "add_baggage_allowance", confirmation_number=conf, journey_id=journey, num_bags=4, flight_number="SK330")
    assert [s["bags_checked"] for s in bookings(session, conf)[0]["segments"]] == [2, 4]
    assert session.actions[-1]["flight_number"] == "SK330" and session.actions[-2]["flight_number"] is None
    expect_error(session, "add_baggage_allowance", "flight_not_found", confirmation_number=conf, journey_id=journey,
                 num_bags=1, flight_number="SK331")
    assert session.db["reservations"][conf]["ancillaries"] == fees


def test_case_42_baggage_after_partial_rebook() -> None:
    session = ToolSession(sample_two_leg_db())
    rebook(session, SAMPLE_CONF, SAMPLE_OLD, SAMPLE_NEW, flight_number="SW300")
    ok(session, "add_baggage_allowance", confirmation_number=SAMPLE_CONF, journey_id=SAMPLE_OLD, num_bags=2, flight_number="SW400")
    original, _new, kept = bookings(session, SAMPLE_CONF)
    assert kept["segments"][0]["bags_checked"] == 2
    assert [s["bags_checked"] for s in original["segments"]] == [1, 1]


def test_case_43_meal_none_is_stored_as_string() -> None:
    session = ToolSession(initial_db("1.1.2"))
    result = ok(session, "add_meal_request", confirmation_number=ZK, passenger_id="PAX001", journey_id=OLD_1_1_2, meal_type="none")
    assert result["message"] == "none meal request added"
    assert bookings(session, ZK)[0]["segments"][0]["meal_request"] == "none"
    assert db_hash(session.db) == db_hash(initial_db("1.1.2"))
    expect_error(session, "add_meal_request", "invalid_meal_type", confirmation_number=ZK, passenger_id="PAX001",
                 journey_id=OLD_1_1_2, meal_type="Vegan")


# ---------------------------------------------------------------- standby

def test_case_44_standby_behind_existing_entry() -> None:
    session = ToolSession(initial_db("4.2.5"))
    result = ok(session, "add_to_standby", confirmation_number="NTJBNE", journey_id="FL_SK405_20260602", passenger_ids=["PAX001"])
    assert result["standby_list_position"] == 2
    assert len(session.db["journeys"]["FL_SK405_20260602"]["standby_list"]) == 2
    assert session.db["reservations"]["NTJBNE"]["standby_list"] == [
        {"journey_id": "FL_SK405_20260602", "passenger_ids": ["PAX001"], "position": 2, "status": "pending"}
    ]
    assert db_hash(session.db) == db_hash(expected_db("4.2.5"))


def test_case_45_positions_are_positional() -> None:
    db = initial_db("3.1.3")
    db["reservations"]["EPXYEK"]["passengers"].append({"passenger_id": "PAX002", "last_name": "Two"})
    session = ToolSession(db)
    journey = "FL_SK330_20260611"
    result = ok(session, "add_to_standby", confirmation_number="EPXYEK", journey_id=journey, passenger_ids=["PAX001", "PAX002"])
    assert result["standby_list_position"] == 2 and result["message"] == "Added 2 passenger(s) to standby list"
    assert [e["position"] for e in db["journeys"][journey]["standby_list"]] == [1, 2]
    assert db["reservations"]["EPXYEK"]["standby_list"][0]["position"] == 2
    assert ok(session, "add_to_standby", confirmation_number="EPXYEK", journey_id=journey, passenger_ids=["PAX001"])[
        "standby_list_position"] == 3
    assert [e["position"] for e in db["journeys"][journey]["standby_list"]] == [1, 2, 3]


def test_case_46_standby_checks_and_unknown_reservation() -> None:
    session = ToolSession(initial_db("2.1.2"))
    expect_error(session, "add_to_standby", "flight_cancelled", confirmation_number="PP248Z",
                 journey_id="FL_SK518_20260607", passenger_ids=["PAX001"])
    result = expect_error(session, "add_to_standby", "invalid_passengers", confirmation_number="PP248Z",
                          journey_id="FL_SK610_20260608", passenger_ids=["PAX001", "PAX002"])
    assert "PAX002" in result["message"] and "PAX001" not in result["message"]
    expect_error(session, "add_to_standby", "flight_not_found", confirmation_number="PP248Z",
                 journey_id="FL_SK999_20260608", passenger_ids=["PAX001"])
    before = copy.deepcopy(session.db)
    ok(session, "add_to_standby", confirmation_number="zzzz99", journey_id="FL_SK610_20260608", passenger_ids=["PAX007"])
    assert session.db["journeys"]["FL_SK610_20260608"]["standby_list"] == [
        {"confirmation_number": "ZZZZ99", "passenger_id": "PAX007", "position": 1}
    ]
    del session.db["journeys"]["FL_SK610_20260608"]["standby_list"]
    assert session.db == before


@pytest.mark.parametrize("journey_id", ["", "SW200_20260320", "FL_20260320", "journey_123", "FL-SK610-20260608"])
def test_standby_checks_journey_id_format(journey_id: str) -> None:
    """tools.md §3.11: a malformed or empty journey id is a format error, not flight_not_found."""
    session = ToolSession(initial_db("2.1.2"))
    before = copy.deepcopy(session.db)
    result = expect_error(session, "add_to_standby", "invalid_journey_id_format", confirmation_number="PP248Z",
                          journey_id=journey_id, passenger_ids=["PAX001"])
    assert "FL_" in result["message"]
    assert session.db == before


# ---------------------------------------------------------------- credits and vouchers

def test_case_47_travel_credit() -> None:
    session = ToolSession(initial_db("5.1.5"))
    params = {"confirmation_number": "heewrm", "passenger_id": "PAX001", "amount": "50", "credit_reason": "goodwill"}
    result = ok(session, "issue_travel_credit", **params)
    assert result["credit_code"] == "TCHEEWRMPAX" and result["valid_months"] == 12 and result["amount"] == 50.0
    stored = session.db["travel_credits"]["TCHEEWRMPAX"]
    assert stored["amount"] == 50.0 and type(stored["amount"]) is float
    assert (stored["issued_date"], stored["expiry_date"], stored["status"]) == ("2026-07-15", "2027-07-15", "active")
    expect_error(session, "issue_travel_credit", "invalid_parameter", **{**params, "amount": 0})
    expect_error(session, "issue_travel_credit", "invalid_credit_reason", **{**params, "credit_reason": "invalid_reason"})
    ok(session, "issue_travel_credit", **{**params, "amount": 188.0, "credit_reason": "cancellation_non_refundable"})
    assert list(session.db["travel_credits"]) == ["TCHEEWRMPAX"]
    assert session.db["travel_credits"]["TCHEEWRMPAX"]["amount"] == 188.0


@pytest.mark.parametrize("reason,amount", [
    ("delay_over_2_hours", 12), ("delay_over_4_hours", 15), ("cancellation_wait_same_day", 15), ("irrops_overnight", 25),
])
def test_case_48_meal_voucher(reason: str, amount: int) -> None:
    session = ToolSession(initial_db("2.1.2"))
    result = ok(session, "issue_meal_voucher", confirmation_number="PP248Z", passenger_id="PAX001", voucher_reason=reason)
    assert result["amount"] == amount and result["voucher_code"] == "MEAL-PP248Z-PAX0"
    assert result["valid_at"] == "Airport terminal restaurants"
    stored = session.db["meal_vouchers"]["MEAL-PP248Z-PAX0"]
    assert stored["amount"] == amount and type(stored["amount"]) is int and stored["issued_date"] == "2026-06-07"
    expect_error(session, "issue_meal_voucher", "not_found", confirmation_number="NOPE00", passenger_id="PAX001",
                 voucher_reason=reason)


def test_case_49_hotel_voucher() -> None:
    session = ToolSession(initial_db("2.1.2"))
    expect_error(session, "issue_hotel_voucher", "exceeds_authority", confirmation_number="PP248Z", passenger_id="PAX001", num_nights=4)
    expect_error(session, "issue_hotel_voucher", "invalid_parameter", confirmation_number="PP248Z", passenger_id="PAX001", num_nights=0)
    expect_error(session, "issue_hotel_voucher", "not_found", confirmation_number="NOPE00", passenger_id="PAX001", num_nights=4)
    assert "hotel_vouchers" not in session.db
    result = ok(session, "issue_hotel_voucher", confirmation_number="PP248Z", passenger_id="PAX001", num_nights=1)
    assert result["voucher_code"] == "HOTEL-PP248Z" and result["number_of_nights"] == 1
    assert session.db["hotel_vouchers"]["HOTEL-PP248Z"]["num_nights"] == 1
    session = ToolSession(initial_db("2.1.2"))
    rebook(session, "PP248Z", "FL_SK518_20260607", "FL_SK610_20260608", "irrops_cancellation")
    ok(session, "issue_meal_voucher", confirmation_number="PP248Z", passenger_id="PAX001", voucher_reason="irrops_overnight")
    ok(session, "issue_hotel_voucher", confirmation_number="PP248Z", passenger_id="PAX001", num_nights=1)
    ok(session, "assign_seat", confirmation_number="PP248Z", passenger_id="PAX001", journey_id="FL_SK610_20260608", seat_preference="aisle")
    assert db_hash(session.db) == db_hash(expected_db("2.1.2"))


# ---------------------------------------------------------------- transfer, end, invariants

def test_case_50_transfer_to_agent() -> None:
    session = ToolSession(initial_db("6.3.1"))
    conf = next(iter(session.db["reservations"]))
    expect_error(session, "transfer_to_agent", "invalid_parameter", confirmation_number=conf, transfer_reason="passenger_requested")
    assert session.end_requested is False and session.end_message is None
    before = db_hash(session.db)
    result = ok(session, "transfer_to_agent", confirmation_number=conf, transfer_reason="passenger_requested", issue_summary="x")
    assert result["transfer_id"] == f"TRF-{conf}-001" and result["estimated_wait"] == "2-3 minutes"
    assert db_hash(session.db) == before
    assert [a["action_type"] for a in session.actions] == ["transfer_to_agent"]
    assert session.end_requested is True and session.end_message == "Transfer complete."


@pytest.mark.parametrize("arguments", [{}, "{}", "", "not json", None, [1], {"reason": "bye"}])
def test_case_51_end_conversation(arguments: object) -> None:
    session = ToolSession(initial_db("1.1.2"))
    before = copy.deepcopy(session.db)
    result = execute_tool(session, "end_conversation", arguments)
    assert result == {"success": True, "message": "Exit message sent.", "status": "success"}
    assert result_status(result) == ("success", None)
    assert session.db == before and session.actions == [] and session.end_requested is True
    assert session.end_message == "The task is finished."


FAILING_CALLS = [
    ("1.1.2", "get_reservation", {"confirmation_number": "ABC", "last_name": "x"}),
    ("1.1.2", "get_reservation", {"confirmation_number": "ZK3FFW", "last_name": "Smith"}),
    ("1.1.2", "rebook_flight", {"confirmation_number": ZK, "journey_id": OLD_1_1_2, "new_journey_id": "FL_SK999_20260325",
                                "rebooking_type": "voluntary", "waive_change_fee": False}),
    ("1.1.2", "rebook_flight", {"confirmation_number": ZK, "journey_id": OLD_1_1_2, "new_journey_id": SK703,
                                "rebooking_type": "voluntary", "waive_change_fee": "maybe"}),
    ("2.1.2", "rebook_flight", {"confirmation_number": "PP248Z", "journey_id": "FL_SK518_20260607",
                                "new_journey_id": "FL_SK612_20260608", "rebooking_type": "irrops_delay", "waive_change_fee": 0}),
    ("5.1.5", "cancel_reservation", {"confirmation_number": "HEEWRM", "journey_id": "FL_SK999_20260727",
                                     "cancellation_reason": "voluntary"}),
    ("2.1.6", "process_refund", {"confirmation_number": "YLCNSG", "refund_amount": "lots", "refund_type": "full_fare"}),
    ("3.1.5", "assign_seat", {"confirmation_number": "M9M6FJ", "passenger_id": "PAX001",
                              "journey_id": "FL_SK715_SK330_20260908", "seat_preference": "window"}),
    ("3.1.5", "add_baggage_allowance", {"confirmation_number": "M9M6FJ", "journey_id": "FL_SK715_SK330_20260908",
                                        "num_bags": 3, "flight_number": "SK999"}),
    ("1.1.2", "add_meal_request", {"confirmation_number": "NOPE00", "passenger_id": "PAX001", "journey_id": OLD_1_1_2,
                                   "meal_type": "vegan"}),
    ("2.1.2", "add_to_standby", {"confirmation_number": "PP248Z", "journey_id": "FL_SK518_20260607", "passenger_ids": []}),
    ("5.1.5", "issue_travel_credit", {"confirmation_number": "HEEWRM", "passenger_id": "PAX001", "amount": -1,
                                      "credit_reason": "goodwill"}),
    ("2.1.2", "issue_hotel_voucher", {"confirmation_number": "PP248Z", "passenger_id": "PAX001", "num_nights": 9}),
    ("2.1.2", "issue_meal_voucher", {"confirmation_number": "PP248Z", "passenger_id": "PAX001", "voucher_reason": "snack"}),
    ("1.1.2", "transfer_to_agent", {"confirmation_number": "", "transfer_reason": "x", "issue_summary": "y"}),
    ("1.1.2", "no_such_tool", {}),
]


@pytest.mark.parametrize("eva_id,tool,params", FAILING_CALLS)
def test_case_53_failures_change_nothing(eva_id: str, tool: str, params: dict) -> None:
    session = ToolSession(initial_db(eva_id))
    before = (copy.deepcopy(session.db), db_hash(session.db))
    result = execute_tool(session, tool, params)
    assert result["status"] == "error" and set(result) == {"status", "error_type", "message"}
    assert (session.db, db_hash(session.db)) == before
    assert session.actions == [] and session.counters == {} and session.end_requested is False


def test_case_56_messy_path_is_accepted_but_misses_gold() -> None:
    session = ToolSession(initial_db("1.1.2"))
    rebook(session, ZK, OLD_1_1_2, SK703)
    _cancel(session, ZK, SK703)
    rebook(session, ZK, SK703, SK703)  # from a cancelled booking: allowed
    ok(session, "assign_seat", confirmation_number=ZK, passenger_id="PAX001", journey_id=SK703, seat_preference="window")
    assert len(bookings(session, ZK)) == 3
    assert db_hash(session.db) != db_hash(expected_db("1.1.2"))


def test_db_not_initialized() -> None:
    for db in ({}, None):
        session = ToolSession(db)  # type: ignore[arg-type]
        result = execute_tool(session, "get_reservation", {"confirmation_number": ZK, "last_name": "x"})
        assert result_status(result) == ("error", "db_not_initialized")
    # Validation runs first.
    result = execute_tool(ToolSession({}), "get_reservation", {"confirmation_number": "bad", "last_name": "x"})
    assert result["error_type"] == "invalid_confirmation_number_format"


def test_unexpected_exception_mid_mutation_is_rolled_back() -> None:
    db = initial_db("1.1.2")
    # Step 6 (return the old seats) breaks only after steps 1-5 have mutated the DB.
    db["journeys"][OLD_1_1_2]["segments"][0]["available_seats"] = None
    session = ToolSession(db)
    snapshot = copy.deepcopy(db)
    result = execute_tool(session, "rebook_flight", {"confirmation_number": ZK, "journey_id": OLD_1_1_2,
                                                     "new_journey_id": SK703, "rebooking_type": "voluntary",
                                                     "waive_change_fee": False})
    assert result["error_type"] == "execution_error"
    assert session.db == snapshot and session.actions == [] and session.counters == {}
