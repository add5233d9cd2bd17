"""The canonical hash (tools.md §6.1): every vector of §7 and the guards of §9 case 54."""
from __future__ import annotations

import copy
import json
from decimal import Decimal

import pytest

from scenarios.data_root import expected_db, initial_db
from scenarios.domains.eva_airline.tools import ToolSession, execute_tool
from scoring.core.canonical import canonical_json, db_hash


# ---------------------------------------------------------------- case 54: the hash

VECTORS = {
    "1.1.2": ("1c8ca8c775d255dcedbcc1641eed5ea6925dc965b672302db254a9dc2c59fb16",
              "d929bfc083ab92a135fd7c278fbf27100de9f05ffb77c7656d05037f86d8616b"),
    "2.1.2": ("c3d16d5c6b62a456d44cb1798bbe5ce05b2495b2063b3b6b849824b51cd305b3",
              "3569765a453d09753a2a76dc8bf55d77febefd29791da5c4f062db8d731c2c88"),
    "4.2.5": ("fbbf5fe1298e25a0f24d035cf9d81f37460d4c2c9fd133e98247986fd91ea4c4",
              "ebda3ae63d0b5cc905a164d30bc709489172ab6eabb82313ec0e5f1bc1f58932"),
    "7.1.1": ("b66d7be41193f687b4014d54eaf40a0977b9f5d13921d2c8aa38e43902e116c1",
              "b66d7be41193f687b4014d54eaf40a0977b9f5d13921d2c8aa38e43902e116c1"),
    "5.1.3": ("502ef2de04213527c760a7efb86d8f0186e239446e46d5274f1f684f0a09d033",
              "1a806ee2fda8aa903c0972da129ea938665ac4797aee185f04a262274416b531"),
}
TEXT_VECTORS = [
    ("{}", "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"),
    ('{"session": {"x": 1}}', "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"),
    ('{"session":{"confirmation_number":"ABC123"},"b":[1.0,2.5,"NULL"," none ","None."],"a":{"bookings":[{"x":2,"y":"\u00e9"},'
     '{"x":1.0}],"standby_list":[3,1,2],"segments":[3,1,2]}}',
     "d99c11223eedbc1d9fa2172be8f4b10a9e94270dfd68b3c15259dedcb5ac91f4"),
    ('{"bookings":[{"a":9},{"a":10}]}', "da69d8371114211281468763f998875d09d9a819c416ff4b6fe0e8a7fbcafc0f"),
    ('{"r":{"standby_list":[{"k":"b"},{"k":"A"},{"k":"\u00e9"},{"k":"z"}]},"x":-0.0,"y":1e20,"z":true,"w":"Null "}',
     "2baba3aa3d0afc0c32a2ce24d3e33f601eb603923d5401873905847010ef2063"),
]


@pytest.mark.parametrize("eva_id", sorted(VECTORS))
def test_case_54_fixture_vectors(eva_id: str) -> None:
    initial_hash, gold_hash = VECTORS[eva_id]
    assert db_hash(initial_db(eva_id)) == initial_hash
    assert db_hash(expected_db(eva_id)) == gold_hash


@pytest.mark.parametrize("text,digest", TEXT_VECTORS)
def test_case_54_text_vectors(text: str, digest: str) -> None:
    assert db_hash(json.loads(text)) == digest


def test_case_54_order_and_type_guards() -> None:
    db = initial_db("3.1.5")
    base = db_hash(db)
    res = db["reservations"]["M9M6FJ"]
    res["bookings"].append(copy.deepcopy(res["bookings"][0]) | {"journey_id": "FL_SK907_20260908"})
    with_two = db_hash(db)
    res["bookings"].reverse()
    assert db_hash(db) == with_two
    res["bookings"].reverse()
    res["bookings"][0]["segments"].reverse()
    assert db_hash(db) != with_two
    db = initial_db("2.1.6")
    session = ToolSession(db)
    execute_tool(session, "process_refund", {"confirmation_number": "YLCNSG", "refund_amount": 289, "refund_type": "full_fare"})
    as_float = db_hash(db)
    db["refunds"]["REF-YLCNSG-001"]["refund_amount"] = Decimal("289.00")
    assert db_hash(db) != as_float
    db = initial_db("1.1.2")
    db["hotel_vouchers"] = {}
    assert db_hash(db) != VECTORS["1.1.2"][0] and base != with_two


def test_canonical_form_of_the_spec_example() -> None:
    text = ('{"session":{"confirmation_number":"ABC123"},"b":[1.0,2.5,"NULL"," none ","None."],'
            '"a":{"bookings":[{"x":2,"y":"\u00e9"},{"x":1.0}],"standby_list":[3,1,2],"segments":[3,1,2]}}')
    assert canonical_json(json.loads(text)) == (
        '{"a":{"bookings":[{"x":1},{"x":2,"y":"\\u00e9"}],"segments":[3,1,2],"standby_list":[1,2,3]},'
        '"b":[1,2.5,null,null,"None."]}'
    )
