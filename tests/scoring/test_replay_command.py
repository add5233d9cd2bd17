"""``manage.py replay_calls``: output shape, exit codes and the all-gold run."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests import warm_python

REPO = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess:
    return warm_python.run([sys.executable, "manage.py", "replay_calls", *args], cwd=REPO,
                           capture_output=True, text=True, timeout=120)


def test_all_gold_lists_match() -> None:
    proc = _run("--scenario", "all", "--gold")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == "50/50 matched"
    records = [json.loads(line) for line in lines[:-1]]
    assert len(records) == 50 and all(r["match"] and r["diff"] == {} for r in records)
    assert records[0]["scenario"] == "eva_airline__voluntary_date_change"


def test_calls_file_by_eva_id_reports_each_call(tmp_path: Path) -> None:
    calls = {"calls": [
        {"tool": "get_reservation", "params": {"confirmation_number": "zk3ffw", "last_name": "Rodriguez"}},
        {"tool": "rebook_flight", "params": {"confirmation_number": "ZK3FFW", "journey_id": "FL_SK621_20260320",
                                              "new_journey_id": "FL_SK703_20260325", "rebooking_type": "voluntary",
                                              "waive_change_fee": False}},
        {"tool": "assign_seat", "params": {"confirmation_number": "ZK3FFW", "passenger_id": "PAX001",
                                            "journey_id": "FL_SK703_20260325", "seat_preference": "window"}},
        {"tool": "no_such_tool", "params": {}},
        {"tool": "get_reservation", "params": "not an object"},
        {"tool": "end_conversation", "params": {}},
    ]}
    path = tmp_path / "calls.json"
    path.write_text(json.dumps(calls))
    proc = _run("--scenario", "1.1.2", "--calls", str(path))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["scenario"] == "eva_airline__voluntary_date_change"
    assert out["match"] is True and out["diff"] == {}
    assert out["initial_hash"] == "1c8ca8c775d255dcedbcc1641eed5ea6925dc965b672302db254a9dc2c59fb16"
    assert out["expected_hash"] == out["final_hash"] == "d929bfc083ab92a135fd7c278fbf27100de9f05ffb77c7656d05037f86d8616b"
    assert [(r["status"], r["error_type"]) for r in out["results"]] == [
        ("success", None), ("success", None), ("success", None),
        ("error", "tool_not_found"), ("error", "invalid_parameter"), ("success", None)]


def test_mismatch_shows_structured_diff(tmp_path: Path) -> None:
    path = tmp_path / "calls.json"
    path.write_text(json.dumps({"calls": []}))
    out = json.loads(_run("--scenario", "eva_airline__voluntary_date_change", "--calls", str(path)).stdout)
    assert out["match"] is False
    assert "reservations" in out["diff"]["tables_modified"]


@pytest.mark.parametrize("content", ["{not json", "[]", '{"calls": {}}', '{"calls": [{"params": {}}]}'])
def test_ill_formed_calls_file_exits_2(tmp_path: Path, content: str) -> None:
    path = tmp_path / "calls.json"
    path.write_text(content)
    proc = _run("--scenario", "1.1.2", "--calls", str(path))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1


def test_missing_file_and_unknown_scenario_exit_2(tmp_path: Path) -> None:
    assert _run("--scenario", "1.1.2", "--calls", str(tmp_path / "absent.json")).returncode == 2
    proc = _run("--scenario", "9.9.9", "--gold")
    assert proc.returncode == 2 and "9.9.9" in proc.stderr
