"""Review in the admin: editable review fields stamped with reviewer and time, filters, the CSV
export and re-scoring from stored metrics; the run and result pages show the review."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from scoring.models import Run, ScenarioResult

CHANGE = "/admin/scoring/scenarioresult/"


@pytest.fixture
def staff_client() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("reviewer", password="pw-reviewer-123"))
    return client


@pytest.fixture
def result(tmp_path: Path) -> ScenarioResult:
    run = Run.objects.create(timestamp="20260101_000000", session_dir=str(tmp_path), status=Run.Status.FINISHED,
                             scenario_names=["eva_airline__1_1_3"], total_scenarios=1)
    directory = tmp_path / "eva_airline__1_1_3"
    directory.mkdir()
    # Stored as a pass although clean_exit failed (the whitelist has both): re-scoring must fix it.
    metrics = {"scenario_name": "eva_airline__1_1_3", "scenario_directory": str(directory), "db_state_match": True, "clean_exit": False,
               "is_successful": True, "is_task_successful": True, "stop_reason": "[EXIT]", "turns": [],
               "success_breakdown": {"passed": ["db_state_match", "clean_exit"], "failed": [],
                                     "not_applicable": [], "excluded": []}}
    (directory / "metrics.json").write_text(json.dumps(metrics))
    return ScenarioResult.objects.create(run=run, scenario_name="eva_airline__1_1_3", directory=str(directory),
                                         metrics=metrics, is_successful=True, stop_reason="[EXIT]")


@pytest.mark.django_db
def test_review_is_saved_with_reviewer_and_time_and_shown(staff_client: Client, result: ScenarioResult) -> None:
    response = staff_client.post(f"{CHANGE}{result.pk}/change/", {
        "reviewed": "on", "review_verdict": "disagrees", "review_note": "The agent never confirmed the fee."})
    assert response.status_code == 302
    result.refresh_from_db()
    assert result.reviewed and result.review_verdict == "disagrees"
    assert result.reviewed_by.username == "reviewer" and result.reviewed_at is not None
    assert result.is_successful is True and result.stop_reason == "[EXIT]"  # the runner's fields are read-only
    page = staff_client.get(f"/results/{result.pk}/").content.decode()
    assert "The agent never confirmed the fee." in page and "disagrees with the automatic verdict" in page
    run_page = staff_client.get(f"/runs/{result.run_id}/").content.decode()
    assert "1 of 1 (0 agree, 1 disagree)" in run_page
    filtered = staff_client.get(f"{CHANGE}?reviewed__exact=1&review_verdict__exact=disagrees&group=1.x").content.decode()
    assert f'href="/admin/scoring/scenarioresult/{result.pk}/change/' in filtered and "1 scenario result" in filtered
    agreeing = staff_client.get(f"{CHANGE}?review_verdict__exact=agrees").content.decode()
    assert f"/admin/scoring/scenarioresult/{result.pk}/change/" not in agreeing
    listing = staff_client.get(f"{CHANGE}?group=1.x").content.decode()
    assert "eva_airline__1_1_3" in listing
    assert "eva_airline__1_1_3" not in staff_client.get(f"{CHANGE}?group=2.x").content.decode()


@pytest.mark.django_db
def test_csv_export_and_rescore_actions(staff_client: Client, result: ScenarioResult) -> None:
    exported = staff_client.post(CHANGE, {"action": "export_csv", "_selected_action": [result.pk]})
    assert exported["Content-Type"].startswith("text/csv")
    lines = exported.content.decode().splitlines()
    assert len(lines) == 2 and lines[1].startswith("eval_20260101_000000,eva_airline__1_1_3,1,True")

    staff_client.post(CHANGE, {"action": "rescore", "_selected_action": [result.pk]})
    result.refresh_from_db()
    assert result.is_successful is False and result.metrics["success_breakdown"]["failed"] == ["clean_exit"]
    assert result.run.completed_scenarios == 1 and result.run.successful_scenarios == 0
    on_disk = json.loads((Path(result.directory) / "metrics.json").read_text())
    assert on_disk["is_successful"] is False  # the file and the row still agree
