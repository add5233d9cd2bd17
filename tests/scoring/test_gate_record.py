"""The gate's verdict as stored data: JSON-safe, the same figures and text as the gate itself, and
known values for a small case worked by hand."""
from __future__ import annotations

import json

import pytest

from scoring.core.gate import evaluate
from scoring.core.gate_record import unavailable_record, verdict_record
from scoring.core.gate_report import gate_lines


def test_a_record_holds_the_verdict_its_rules_and_flips() -> None:
    baseline = {"a": {1: True, 2: True, 3: True}, "b": {1: True, 2: False, 3: True}}
    run = {"a": {1: False, 2: False, 3: False}, "b": {1: True, 2: True, 3: True}}
    verdict = evaluate(baseline, run)
    record = verdict_record(verdict, baseline_label="eval_20260101_000000")

    assert json.loads(json.dumps(record)) == record
    assert record["regression"] is True and record["alpha"] == 0.05
    assert (record["scenarios"], record["attempts"], record["base_passes"], record["passes"]) == (2, 6, 5, 3)
    assert record["difference"]["delta"] == pytest.approx(-1 / 3)
    assert record["difference"]["low"] < record["difference"]["delta"] < record["difference"]["high"]
    # Sign-flip over −1 and +1/3: two of the four sign assignments sum to −2/3 or less.
    assert [rule["p"] for rule in record["rules"]] == [pytest.approx(0.5), pytest.approx(0.1), None]
    assert [rule["fired"] for rule in record["rules"]] == [False, False, True]
    # a: 3/3 → 0/3, Fisher 1/20, Holm over two 0.1; b gained: p of a drop is 1.
    assert record["flips"] == [
        {"name": "a", "direction": "fewer", "base_passes": 3, "passes": 0, "trials": 3,
         "p_drop": pytest.approx(0.05), "p_drop_holm": pytest.approx(0.1), "broken": True},
        {"name": "b", "direction": "more", "base_passes": 2, "passes": 3, "trials": 3,
         "p_drop": pytest.approx(1.0), "p_drop_holm": pytest.approx(1.0), "broken": False}]
    assert record["reasons"] == verdict.reasons() and "passed every baseline trial" in record["reasons"][0]
    assert record["lines"] == gate_lines(verdict, "eval_20260101_000000")


def test_a_gate_that_could_not_judge_says_why_and_gives_no_verdict() -> None:
    record = unavailable_record("nothing in common", baseline_label="eval_x")
    assert record == {"baseline_label": "eval_x", "unavailable": "nothing in common"}
    assert "regression" not in record
