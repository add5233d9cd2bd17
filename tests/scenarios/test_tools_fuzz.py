"""Malformed and random tool calls: never raise, and a failed call changes nothing (§1.2)."""
from __future__ import annotations

import copy
import functools
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scenarios.data_root import initial_db
from scenarios.domains.eva_airline.tools import TOOL_NAMES, ToolSession, execute_tool, result_status
from scenarios.domains.eva_airline.tools.validation import TOOL_PARAMS
from scoring.core.canonical import db_hash

FIXTURES = ("1.1.2", "3.1.5", "4.2.5")
PARAM_NAMES = sorted({spec.name for specs in TOOL_PARAMS.values() for spec in specs})
# Values that pass validation often enough to reach the lookups and the writes.
PLAUSIBLE = [
    "ZK3FFW", "zk3ffw", "M9M6FJ", "NTJBNE", "QQQQQQ", "FL_SK621_20260320", "FL_SK703_20260325", "FL_SK715_SK330_20260908",
    "FL_SK907_20260908", "FL_SK405_20260602", "FL_SK999_20260101", "SK621", "SK330", "SK715", "sk703", "PAX001", "PAX002",
    "PAX12", "2026-03-25", "2026-09-08", "AUS", "lax", "ATL", "MSP", "voluntary", "irrops_delay", "same_day", "main_cabin",
    "basic_economy", "business", "any", "window", "aisle", "no_preference", "vegetarian", "none", "full_fare",
    "goodwill", "irrops_overnight", "medical", "Rodriguez", "Price", "", " ", "PAX001\n", "1", "2.0", "yes", "maybe",
]

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12), st.sampled_from(PLAUSIBLE),
)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=6)
param_values = st.one_of(st.sampled_from(PLAUSIBLE), st.lists(st.sampled_from(PLAUSIBLE), max_size=3), json_values)
param_dicts = st.dictionaries(st.one_of(st.sampled_from(PARAM_NAMES), st.text(max_size=6)), param_values, max_size=8)
arguments = st.one_of(
    param_dicts,
    param_dicts.map(json.dumps),
    st.text(max_size=20),
    json_values.filter(lambda v: not isinstance(v, dict)).map(json.dumps),
    st.sampled_from([None, 42, 1.5, ["a"], b"{}", object()]),
)
# Mostly real tool names, so the calls get past dispatch; sometimes garbage.
tool_names = st.sampled_from(
    list(TOOL_NAMES[:-1]) * 3 + ["", "END_CONVERSATION", "Get_Reservation", "get_reservation ", "rm -rf", None, 7]
)
calls = st.lists(st.tuples(tool_names, arguments), min_size=1, max_size=5)


@functools.cache
def _fixture(eva_id: str) -> dict:
    return initial_db(eva_id)


def _check_call(session: ToolSession, name: object, args: object) -> None:
    db_before = copy.deepcopy(session.db)
    hash_before = db_hash(session.db)
    actions_before = copy.deepcopy(session.actions)
    counters_before = dict(session.counters)
    result = execute_tool(session, name, args)  # type: ignore[arg-type]
    assert isinstance(result, dict)
    status, error_type = result_status(result)
    json.dumps(result)  # results are plain JSON
    json.dumps(session.db)  # so is the DB, whatever happened
    if status == "error":
        assert result["status"] == "error" and isinstance(error_type, str) and isinstance(result["message"], str)
        assert set(result) == {"status", "error_type", "message"}
        assert session.db == db_before and db_hash(session.db) == hash_before
        assert session.actions == actions_before and session.counters == counters_before
        assert session.end_requested is False
    else:
        assert result["status"] == "success"
        assert len(session.actions) - len(actions_before) in (0, 1)


@settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(eva_id=st.sampled_from(FIXTURES), batch=calls)
def test_random_calls_never_raise_and_failures_change_nothing(eva_id: str, batch: list[tuple[object, object]]) -> None:
    session = ToolSession(copy.deepcopy(_fixture(eva_id)))
    for name, args in batch:
        if session.end_requested:
            break
        _check_call(session, name, args)


@settings(deadline=None, max_examples=250, suppress_health_check=[HealthCheck.too_slow])
@given(
    eva_id=st.sampled_from(FIXTURES),
    name=st.sampled_from(TOOL_NAMES[:-1]),
    drop=st.sets(st.sampled_from(PARAM_NAMES), max_size=3),
    overrides=st.dictionaries(st.sampled_from(PARAM_NAMES), param_values, max_size=3),
)
def test_near_valid_calls(eva_id: str, name: str, drop: set[str], overrides: dict) -> None:
    """Start from a plausible full argument set, then remove or corrupt a few parameters."""
    conf = next(iter(_fixture(eva_id)["reservations"]))
    base = {
        "confirmation_number": conf, "last_name": "", "journey_id": "FL_SK621_20260320", "new_journey_id": "FL_SK703_20260325",
        "rebooking_type": "voluntary", "waive_change_fee": False, "passenger_id": "PAX001", "passenger_ids": ["PAX001"],
        "seat_preference": "aisle", "num_bags": 1, "meal_type": "vegan", "cancellation_reason": "voluntary",
        "refund_amount": 10, "refund_type": "full_fare", "amount": 5, "credit_reason": "goodwill", "num_nights": 1,
        "voucher_reason": "delay_over_2_hours", "transfer_reason": "x", "issue_summary": "y", "flight_number": "SK621",
        "flight_date": "2026-03-20", "date": "2026-03-25", "origin": "AUS", "destination": "LAX", "passenger_count": 1,
        "fare_class": "any",
    }
    args = {k: v for k, v in base.items() if k not in drop} | overrides
    session = ToolSession(copy.deepcopy(_fixture(eva_id)))
    _check_call(session, name, args)
