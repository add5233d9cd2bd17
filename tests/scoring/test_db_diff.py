"""tools.md §6.2: the structured diff, checked against the worked example and each diff type."""
from __future__ import annotations

from scoring.core.db_diff import db_diff, value_diff


def test_worked_example_exact() -> None:
    expected = {
        "_current_date": "2026-03-17",
        "reservations": {
            "R1": {"status": "changed", "bookings": [{"journey_id": "J2"}, {"journey_id": "J1"}], "fare_paid": 260.0}
        },
        "refunds": {},
    }
    actual = {
        "_current_date": "2026-03-18",
        "reservations": {
            "R1": {"status": "confirmed", "bookings": [{"journey_id": "J1"}], "fare_paid": 260, "seat": None},
            "R2": {},
        },
        "hotel_vouchers": {},
    }
    assert db_diff(expected, actual) == {
        "tables_added": ["hotel_vouchers"],
        "tables_removed": ["refunds"],
        "tables_modified": {
            "_current_date": {"type": "non_dict_table", "expected": "2026-03-17", "actual": "2026-03-18"},
            "reservations": {
                "records_added": ["R2"],
                "records_removed": [],
                "records_modified": {
                    "R1": {
                        "fields_added": ["seat"],
                        "fields_removed": [],
                        "fields_modified": {
                            "bookings": {
                                "type": "list_length_mismatch",
                                "expected": [{"journey_id": "J1"}, {"journey_id": "J2"}],
                                "actual": [{"journey_id": "J1"}],
                                "expected_length": 2,
                                "actual_length": 1,
                            },
                            "status": {"type": "value_mismatch", "expected": "changed", "actual": "confirmed"},
                        },
                    }
                },
            },
        },
    }


def test_identical_and_normalised_equal_give_empty_diff() -> None:
    db = {"t": {"a": {"x": 1.0, "bookings": [{"b": 2}, {"b": 1}], "note": " NULL "}}, "_current_date": "d"}
    other = {"t": {"a": {"x": 1, "bookings": [{"b": 1}, {"b": 2}], "note": None}}, "_current_date": "d"}
    assert db_diff(db, other) == {"tables_added": [], "tables_removed": [], "tables_modified": {}}


def test_session_is_not_dropped() -> None:
    assert db_diff({"session": {"a": 1}}, {"session": {"a": 2}})["tables_modified"] == {
        "session": {"records_added": [], "records_removed": [], "records_modified": {"a": {"type": "value_mismatch", "expected": 1, "actual": 2}}}
    }


def test_non_dict_table_compared_raw() -> None:
    # 1.0 == 1 under plain equality, so no diff even without normalisation.
    assert db_diff({"n": 1.0}, {"n": 1})["tables_modified"] == {}
    assert db_diff({"n": "none"}, {"n": None})["tables_modified"] == {
        "n": {"type": "non_dict_table", "expected": "none", "actual": None}
    }
    assert db_diff({"t": {}}, {"t": []})["tables_modified"]["t"]["type"] == "non_dict_table"


def test_type_mismatch_names() -> None:
    assert value_diff(1, 1.5) == {"type": "type_mismatch", "expected": 1, "actual": 1.5, "expected_type": "int", "actual_type": "float"}
    assert value_diff("x", None)["actual_type"] == "NoneType"
    # bool vs int is a mismatch even though Python says True == 1 (the hash differs).
    assert value_diff(True, 1)["type"] == "type_mismatch"
    assert value_diff({"a": True}, {"a": 1}) == {
        "fields_added": [],
        "fields_removed": [],
        "fields_modified": {"a": {"type": "type_mismatch", "expected": True, "actual": 1, "expected_type": "bool", "actual_type": "int"}},
    }


def test_list_differences_elementwise() -> None:
    assert value_diff([1, 2, 3], [1, 5, 3]) == {
        "type": "list_differences",
        "differences": [{"index": 1, "diff": {"type": "value_mismatch", "expected": 2, "actual": 5}}],
    }
    # Order matters for ordinary lists...
    assert value_diff([1, 2], [2, 1])["type"] == "list_differences"
    # ...but not for order-independent fields, even when given directly with the field name.
    assert value_diff([1, 2], [2, 1], "standby_list") is None


def test_records_removed_and_keys_stringified() -> None:
    diff = db_diff({"t": {"a": {"v": 1}, "b": {}}}, {"t": {"a": {"v": 2}}})
    assert diff["tables_modified"]["t"] == {
        "records_added": [],
        "records_removed": ["b"],
        "records_modified": {"a": {"fields_added": [], "fields_removed": [], "fields_modified": {"v": {"type": "value_mismatch", "expected": 1, "actual": 2}}}},
    }
