"""Results pages (harness.md §20): rows created through the ORM, pages read through the client."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from scenarios import data_root
from scenarios.models import Scenario
from scoring.web import selectors
from scoring.core.canonical import db_hash
from scoring.models import Run, ScenarioResult

SECRET = "sk-secret-123"
FAILED_NAME = "eva_airline__voluntary_date_change"  # eva 1.1.2
PASSED_NAME = "eva_airline__irrops_cancellation"


def _metrics(name: str, directory: Path, *, success: bool, expected_hash: str, actual_hash: str) -> dict:
    breakdown = (
        {"passed": ["db_state_match", "clean_exit"], "failed": [], "not_applicable": [], "excluded": []}
        if success
        else {"passed": ["clean_exit"], "failed": ["db_state_match"], "not_applicable": [], "excluded": []}
    )
    return {
        "scenario_name": name,
        "scenario_directory": str(directory),
        "total_turns": 2,
        "turns": [
            {"timestamp": "2026-03-17T10:45:01", "role": "user", "text": f"Hello from {name}",
             "heard": "hello from the passenger"},
            {"timestamp": "2026-03-17T10:45:04", "role": "agent", "text": "Your confirmation is ZK3FFW."},
        ],
        "duration_seconds": 12.5,
        "scenario_duration": 13.25,
        "latency_stats": {"count": 1, "mean_ms": 812.5, "p50_ms": 812.5, "p95_ms": 812.5,
                          "min_ms": 812.5, "max_ms": 812.5},
        "latencies": [{"user_transcript": f"Hello from {name}", "agent_transcript": "Your confirmation",
                       "latency_ms": 812.5}],
        "stop_reason": "[EXIT]",
        "clean_exit": True,
        "conversation_end_reason": "agent_end_conversation_tool",
        "is_action_match": "N/A",
        "token_usage": {"agent": {"n_calls": 4, "prompt": 4321, "completion": 210},
                        "user": {"n_calls": 3, "prompt": 1234, "completion": 99}},
        "db_state_expected_hash": expected_hash,
        "db_state_actual_hash": actual_hash,
        "db_state_match": success,
        "success_breakdown": breakdown,
        "is_successful": success,
        "is_task_successful": success,
        "auto_retry_count": 0 if success else 1,
        "auto_retry_reasons": [] if success else ["insufficient agent turns"],
    }


@pytest.fixture
def stored_run(tmp_path: Path) -> Run:
    """A finished run: one passing result, one failing with the untouched initial DB of 1.1.2."""
    session = tmp_path / "eval_20260317_104500"
    run = Run.objects.create(
        timestamp="20260317_104500",
        session_dir=str(session),
        status=Run.Status.FINISHED,
        domain="eva_airline",
        modality="text",
        agent_model="gold-replay",
        user_model="scripted",
        scenario_names=[FAILED_NAME, PASSED_NAME],
        parsed_args={
            "domain": "eva_airline",
            "judge_api_key": SECRET,
            "openai_api_key_env": "",
            "redacted_secret": "<redacted>",
            "agent_backend": {"model": "gold-replay", "api_key": SECRET},
            "concurrency": 2,
        },
        total_scenarios=2,
        completed_scenarios=2,
        successful_scenarios=1,
        success_rate=0.5,
        summary_text="EVALUATION SUMMARY\nOverall success rate: 50.00%\n",
    )
    gold = data_root.expected_db("1.1.2")
    gold.pop("session", None)
    initial = data_root.initial_db("1.1.2")
    failed_dir = session / FAILED_NAME
    passed_dir = session / PASSED_NAME
    ScenarioResult.objects.create(
        run=run, scenario_name=FAILED_NAME, position=0, directory=str(failed_dir),
        metrics=_metrics(FAILED_NAME, failed_dir, success=False, expected_hash=db_hash(gold),
                         actual_hash=db_hash(initial)),
        is_successful=False, is_task_successful=False, db_state_match=False, clean_exit=True,
        stop_reason="[EXIT]", total_turns=2, scenario_duration=13.25, auto_retry_count=1,
        final_db_json=json.dumps(initial),
    )
    ScenarioResult.objects.create(
        run=run, scenario_name=PASSED_NAME, position=1, directory=str(passed_dir),
        metrics=_metrics(PASSED_NAME, passed_dir, success=True, expected_hash="ab" * 32, actual_hash="ab" * 32),
        is_successful=True, is_task_successful=True, db_state_match=True, clean_exit=True,
        stop_reason="[EXIT]", total_turns=2, scenario_duration=9.0,
    )
    return run


def _result(run: Run, name: str) -> ScenarioResult:
    return run.results.get(scenario_name=name)


def _page(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


# --- run list and run detail ------------------------------------------------------------------


@pytest.mark.django_db
def test_run_list_shows_each_run(client: Client, stored_run: Run) -> None:
    html = _page(client, reverse("scoring:run_list"))
    assert "eval_20260317_104500" in html
    assert reverse("scoring:run_detail", args=[stored_run.pk]) in html
    assert "gold-replay" in html and "scripted" in html
    assert "50.00%" in html
    assert "1 / 2 / 2" in html
    assert SECRET not in html


@pytest.mark.django_db
def test_run_list_empty(client: Client) -> None:
    assert "No runs stored yet" in _page(client, "/")


@pytest.mark.django_db
def test_run_detail_results_table_and_summary(client: Client, stored_run: Run) -> None:
    html = _page(client, reverse("scoring:run_detail", args=[stored_run.pk]))
    assert FAILED_NAME in html and PASSED_NAME in html
    assert html.index(FAILED_NAME) < html.index(PASSED_NAME)  # queue order
    assert reverse("scoring:result_detail", args=[_result(stored_run, FAILED_NAME).pk]) in html
    assert 'class="badge pass"' in html and 'class="badge fail"' in html
    assert "[EXIT]" in html and "13.3" in html
    assert '<pre class="summary">EVALUATION SUMMARY\nOverall success rate: 50.00%\n</pre>' in html


@pytest.mark.django_db
def test_run_detail_never_renders_keys(client: Client, stored_run: Run) -> None:
    html = _page(client, reverse("scoring:run_detail", args=[stored_run.pk]))
    assert SECRET not in html
    assert "judge_api_key" not in html
    # Redacted or empty credentials and ordinary flags stay visible.
    assert "redacted_secret" in html and "&lt;redacted&gt;" in html
    assert "openai_api_key_env" in html
    assert "concurrency" in html and "gold-replay" in html


def test_run_flags_filters_sensitive_keys() -> None:
    run = Run(parsed_args={"Judge_API_Key": SECRET, "client_secret": "x", "api_key": None, "nested": {"token_key": "y", "ok": 1}})
    assert selectors.run_flags(run) == [("api_key", "null"), ("nested", '{"ok": 1}')]


@pytest.mark.django_db
def test_run_signal_counts(stored_run: Run) -> None:
    assert selectors.run_signal_counts(selectors.run_results(stored_run)) == [
        {"signal": "db_state_match", "passed": 1, "failed": 1, "not_applicable": 0, "excluded": 0},
        {"signal": "clean_exit", "passed": 2, "failed": 0, "not_applicable": 0, "excluded": 0},
    ]


@pytest.mark.django_db
def test_missing_rows_are_404(client: Client) -> None:
    assert client.get(reverse("scoring:run_detail", args=[999])).status_code == 404
    assert client.get(reverse("scoring:result_detail", args=[999])).status_code == 404
    assert client.get(reverse("scoring:result_artifact", args=[999, "metrics.json"])).status_code == 404


# --- scenario result ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_failed_result_page(client: Client, stored_run: Run) -> None:
    result = _result(stored_run, FAILED_NAME)
    html = _page(client, reverse("scoring:result_detail", args=[result.pk]))
    assert FAILED_NAME in html
    assert result.metrics["db_state_expected_hash"] in html
    assert result.metrics["db_state_actual_hash"] in html
    assert f"Hello from {FAILED_NAME}" in html and "Your confirmation is ZK3FFW." in html
    assert "hello from the passenger" in html  # what the agent heard
    agent_turn = re.search(r'<li class="turn agent".*?</li>', html, re.S).group(0)
    assert "↳ 813 ms" in agent_turn  # the handoff's latency sits on the answer it measured
    assert 'aria-label="handoff 1: 813 milliseconds"' in html
    assert "4321" in html and "1234" in html
    assert "agent_end_conversation_tool" in html and "insufficient agent turns" in html
    # The structured diff names the tables and records the agent left untouched.
    assert "Difference from the gold database" in html
    assert "table reservations" in html and "record ZK3FFW" in html
    assert "table journeys" in html and "main_cabin" in html
    assert "session" not in html.split("Difference from the gold database", 1)[1].split("<h2>", 1)[0]


@pytest.mark.django_db
def test_passing_result_page_has_no_diff(client: Client, stored_run: Run) -> None:
    html = _page(client, reverse("scoring:result_detail", args=[_result(stored_run, PASSED_NAME).pk]))
    assert PASSED_NAME in html and "ab" * 32 in html
    assert "Difference from the gold database" not in html
    assert "No artifact files found" in html


@pytest.mark.django_db
def test_result_db_diff(stored_run: Run) -> None:
    failed = _result(stored_run, FAILED_NAME)
    diff = selectors.result_db_diff(failed)
    assert diff is not None
    assert {"reservations", "journeys"} <= set(diff["tables_modified"])
    assert "session" not in diff["tables_added"] + diff["tables_removed"]
    assert selectors.result_db_diff(_result(stored_run, PASSED_NAME)) is None  # no final DB stored


# --- artifacts ---------------------------------------------------------------------------------


@pytest.fixture
def artifact_result(stored_run: Run, tmp_path: Path) -> ScenarioResult:
    """The failed result with a few files on disk, plus files it must never serve."""
    result = _result(stored_run, FAILED_NAME)
    directory = Path(result.directory)
    (directory / "bot_logs_agent").mkdir(parents=True)
    (directory / "scenario_config").mkdir()
    (directory / "conversation_log.txt").write_text("RTVI Evaluation Bridge - Conversation Log\n")
    (directory / "bot_logs_agent" / "llm_context.json").write_text('[{"role": "assistant"}]')
    (directory / "scenario_config" / "agent_prompt.txt").write_text("prompt")
    (directory.parent / "run_args.json").write_text(SECRET)
    (tmp_path / "outside.txt").write_text(SECRET)
    (directory / "bridge_log.txt").symlink_to(tmp_path / "outside.txt")
    return result


@pytest.mark.django_db
def test_artifact_serves_allowed_files(client: Client, artifact_result: ScenarioResult) -> None:
    response = client.get(reverse("scoring:result_artifact", args=[artifact_result.pk, "conversation_log.txt"]))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert b"".join(response.streaming_content).startswith(b"RTVI Evaluation Bridge")
    nested = client.get(f"/results/{artifact_result.pk}/artifact/bot_logs_agent/llm_context.json")
    assert nested.status_code == 200
    assert b"assistant" in b"".join(nested.streaming_content)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "name",
    [
        "../run_args.json",
        "..%2Frun_args.json",
        "bot_logs_agent/../../run_args.json",
        "scenario_config/agent_prompt.txt",
        "metrics.json",  # allow-listed but absent
        "bridge_log.txt",  # allow-listed, but a symlink out of the directory
        "/etc/passwd",
    ],
)
def test_artifact_refuses(client: Client, artifact_result: ScenarioResult, name: str) -> None:
    response = client.get(f"/results/{artifact_result.pk}/artifact/{name}")
    assert response.status_code == 404
    assert SECRET.encode() not in response.content


@pytest.mark.django_db
def test_result_page_links_present_artifacts(client: Client, artifact_result: ScenarioResult) -> None:
    html = _page(client, reverse("scoring:result_detail", args=[artifact_result.pk]))
    assert reverse("scoring:result_artifact", args=[artifact_result.pk, "conversation_log.txt"]) in html
    assert f"/results/{artifact_result.pk}/artifact/bot_logs_agent/llm_context.json" in html
    assert "artifact/metrics.json" not in html and "artifact/bridge_log.txt" not in html
    assert "<audio" not in html


# --- scenario catalogue ------------------------------------------------------------------------


@pytest.mark.django_db
def test_scenario_catalogue(client: Client) -> None:
    Scenario.objects.create(
        name=FAILED_NAME, eva_id="1.1.2", domain="eva_airline", description="Move a flight to March 25.",
        success_signals=["db_state_match", "clean_exit"], expected_db_hash="cd" * 32, is_seed=True, position=0,
    )
    html = _page(client, reverse("scenarios:list"))
    assert FAILED_NAME in html and "1.1.2" in html and "Move a flight to March 25." in html
    assert "seed" in html


@pytest.mark.django_db
def test_scenario_catalogue_empty(client: Client) -> None:
    assert "scenario mirror is empty" in _page(client, "/scenarios/")


def test_voice_turns_show_heard_vs_said_with_misheard_entities(client: Client, stored_run: Run) -> None:
    result = _result(stored_run, FAILED_NAME)
    result.metrics["turns"] = [
        {"timestamp": "t0", "role": "user", "text": "My code is ZK3FFW, Samantha Rodriguez.",
         "heard": "my code is said cat three samantha rodriguez"},
        {"timestamp": "t1", "role": "agent", "text": "Flight SK621 on March 25.", "heard": "flight s k six two one on march 25"},
    ]
    result.save()
    html = _page(client, reverse("scoring:result_detail", args=[result.pk]))
    misheard = re.findall(r'<p class="misheard">(.*?)</p>', html, re.S)
    assert len(misheard) == 1  # the agent turn's entities all survived
    assert '<mark class="entity">ZK3FFW</mark>' in misheard[0] and "Samantha" not in misheard[0]


def test_run_artifacts_download_as_one_zip(client: Client, stored_run: Run, tmp_path: Path) -> None:
    import io
    import zipfile

    session = Path(stored_run.session_dir)
    (session / PASSED_NAME).mkdir(parents=True)
    (session / "all_summary.txt").write_text("EVALUATION SUMMARY\n")
    (session / PASSED_NAME / "metrics.json").write_text("{}")
    outside = tmp_path / "outside.txt"
    outside.write_text("not part of the run")
    (session / "planted").symlink_to(outside)
    response = client.get(reverse("scoring:run_archive", args=[stored_run.pk]))
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert 'filename="eval_20260317_104500.zip"' in response["Content-Disposition"]
    names = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))).namelist()
    assert sorted(names) == ["eval_20260317_104500/all_summary.txt",
                             f"eval_20260317_104500/{PASSED_NAME}/metrics.json"]
