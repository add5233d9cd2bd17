"""The runner's less travelled paths, end to end through ``run_evaluation`` (harness.md §3, §9–§19):
automatic retry of stale and stalled attempts, a peer that disconnects, trials, the judge, an agent
behind ``--agent-url`` and the progress sink. Every case checks metrics.json, the artifact tree and
the database rows together.

A misbehaving agent is put in place by patching ``scoring.runs.attempt.build_endpoint`` with one that
hands the bridge the protocol double for the agent side and the real built-in passenger otherwise.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

import scoring.runs.attempt as attempt_module
from scenarios.registry import get_eval_scenario
from scoring.core.canonical import db_hash
from scoring.models import Run, ScenarioResult
from scoring.runs.options import REDACTED, RunOptions
from scoring.runs.runner import RunReport, run_evaluation
from tests.standins import ChatCompletionsStandIn
from voice.bridge.endpoints import InProcessEndpoint
from voice.peers import PeerSpec
from voice.peers import build_endpoint as real_build_endpoint
from voice.protocol.websocket import serve_websocket
from voice.testing.double import DoubleOptions, default_options, double_host
from tests import warm_python

REPO = Path(__file__).resolve().parents[2]
SCENARIO = "eva_airline__voluntary_date_change"
OTHER = "eva_airline__1_1_3"
STALE_REASON = "0 conversation turns (bots never exchanged audio)"
STALL_LINE = "  [COUNTED AS FAILURE: insufficient agent turns / stalled — excluded from per-signal rates]"
AUTORETRY_DIR = re.compile(r"\.killed\.autoretry(\d+)\.\d{8}_\d{6}$")
RUN_TIMEOUT = 30.0
"""No single run here should come near this; it turns a hang into a failure instead of a stuck suite."""

pytestmark = pytest.mark.django_db(transaction=True)


# --- helpers -------------------------------------------------------------------------------------


def _options(output_dir: Path, **overrides: Any) -> RunOptions:
    """One text-modality scenario with short timers; every retry waits nothing; scenarios one at
    a time (these tests read the progress in order)."""
    values: dict[str, Any] = {
        "scenarios": [SCENARIO],
        "modality": "text",
        "concurrency": 1,
        "output_dir": str(output_dir),
        "inactivity_timeout": 1.5,
        "duration": 20,
        "auto_retry_backoff_secs": 0.0,
    }
    values.update(overrides)
    return RunOptions(**values)


async def _run(options: RunOptions, **kwargs: Any) -> RunReport:
    return await asyncio.wait_for(run_evaluation(options, **kwargs), timeout=RUN_TIMEOUT)


class AgentDouble:
    """Replaces the agent side of every attempt by a fresh protocol double; counts the attempts."""

    def __init__(self, options: DoubleOptions) -> None:
        self.options = options
        self.attempts = 0

    def build(self, spec: PeerSpec, *, modality: str):
        if spec.role != "agent":
            return real_build_endpoint(spec, modality=modality)
        self.attempts += 1
        host = double_host(replace(self.options, role="agent", modality=modality))
        return InProcessEndpoint(host, label=f"agent-double-{self.attempts}")


def _use_agent_double(monkeypatch: pytest.MonkeyPatch, options: DoubleOptions) -> AgentDouble:
    double = AgentDouble(options)
    monkeypatch.setattr(attempt_module, "build_endpoint", double.build)
    return double


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _killed_dirs(session: Path, name: str) -> list[Path]:
    return sorted(p for p in session.iterdir() if p.is_dir() and p.name.startswith(f"{name}.killed."))


async def _run_row(run_id: int | None) -> Run:
    assert run_id is not None
    return await sync_to_async(Run.objects.get)(pk=run_id)


async def _result_rows(run_id: int | None) -> list[ScenarioResult]:
    return await sync_to_async(list)(ScenarioResult.objects.filter(run_id=run_id).order_by("position", "trial"))


async def _assert_files_and_rows_agree(report: RunReport) -> list[ScenarioResult]:
    """all_metrics.json, each accepted metrics.json, the report and the rows hold the same dicts."""
    session = report.session_dir
    assert _read_json(session / "all_metrics.json") == report.metrics
    assert (session / "all_summary.txt").read_text(encoding="utf-8") == report.summary_text
    run = await _run_row(report.run_id)
    assert run.status == "finished" and run.summary_text == report.summary_text
    assert run.completed_scenarios == len(report.metrics)
    rows = await _result_rows(report.run_id)
    assert [row.metrics for row in rows] == report.metrics
    for row, metrics in zip(rows, report.metrics):
        directory = Path(metrics["scenario_directory"])
        assert directory.parent == session and row.directory == str(directory)
        assert _read_json(directory / "metrics.json") == metrics
        assert row.stop_reason == metrics["stop_reason"] and row.total_turns == metrics["total_turns"]
        assert row.auto_retry_count == metrics["auto_retry_count"]
    return rows


# --- 1. stale attempts are retried automatically (§17) --------------------------------------------


async def test_agent_that_never_speaks_is_retried_once_as_stale(tmp_path: Path, monkeypatch) -> None:
    double = _use_agent_double(monkeypatch, DoubleOptions(never_speak=True))
    report = await _run(_options(tmp_path, max_auto_retries=1))

    assert double.attempts == 2, "one attempt plus exactly one automatic re-run"
    [metrics] = report.metrics
    assert metrics["total_turns"] == 0 and metrics["stop_reason"] == "[INACTIVITY_TIMEOUT]"
    assert metrics["auto_retry_count"] == 1
    assert metrics["auto_retry_reasons"] == [STALE_REASON]
    assert metrics["is_successful"] is False
    session = report.session_dir
    assert Path(metrics["scenario_directory"]) == session / SCENARIO

    [killed] = _killed_dirs(session, SCENARIO)
    match = AUTORETRY_DIR.search(killed.name)
    assert match and match.group(1) == "1" and killed.name.startswith(f"{SCENARIO}.killed.autoretry1.")
    marker = killed / "__KILLED__"
    assert marker.is_file() and marker.stat().st_size == 0
    discarded = _read_json(killed / "metrics.json")
    assert discarded["total_turns"] == 0 and discarded["auto_retry_count"] == 0
    assert "auto_retry_reasons" not in discarded, "the discarded attempt was the first one"
    assert (killed / "bridge_log.txt").is_file() and (killed / "scenario_config" / "metadata.json").is_file()
    assert not (session / SCENARIO / "__KILLED__").exists()

    [row] = await _assert_files_and_rows_agree(report)
    assert row.auto_retry_count == 1 and row.total_turns == 0 and row.metrics["auto_retry_reasons"] == [STALE_REASON]
    log = (session / "evaluation_log.txt").read_text(encoding="utf-8")
    [discard_line] = [line for line in log.splitlines() if killed.name in line]
    assert STALE_REASON in discard_line, "the discard is logged with its reason"


async def test_no_auto_resume_on_stale_keeps_the_first_stale_attempt(tmp_path: Path, monkeypatch) -> None:
    double = _use_agent_double(monkeypatch, DoubleOptions(never_speak=True))
    report = await _run(_options(tmp_path, max_auto_retries=1, no_auto_resume_on_stale=True))

    assert double.attempts == 1
    [metrics] = report.metrics
    assert metrics["total_turns"] == 0 and metrics["auto_retry_count"] == 0
    assert "auto_retry_reasons" not in metrics
    assert _killed_dirs(report.session_dir, SCENARIO) == []
    [row] = await _assert_files_and_rows_agree(report)
    assert row.auto_retry_count == 0


async def test_agent_disconnecting_before_its_first_turn_is_stale(tmp_path: Path, monkeypatch) -> None:
    """§9.1: a [DISCONNECTED] attempt in which the agent never produced a turn counts as stale."""
    double = _use_agent_double(monkeypatch, replace(default_options("agent", "text"), disconnect_mid_turn=0))
    report = await _run(_options(tmp_path, max_auto_retries=1, inactivity_timeout=30.0))

    assert double.attempts == 2
    [metrics] = report.metrics
    assert metrics["stop_reason"] == "[DISCONNECTED]" and metrics["total_turns"] == 0
    assert metrics["auto_retry_count"] == 1 and metrics["auto_retry_reasons"] == [STALE_REASON]
    [killed] = _killed_dirs(report.session_dir, SCENARIO)
    assert _read_json(killed / "metrics.json")["stop_reason"] == "[DISCONNECTED]"
    await _assert_files_and_rows_agree(report)


# --- 2. the stall rule through the runner (§10) ---------------------------------------------------


async def test_stalled_agent_is_counted_as_failure_and_warned_about(tmp_path: Path, monkeypatch) -> None:
    double = _use_agent_double(monkeypatch, replace(default_options("agent", "text"), stall_after=1))
    report = await _run(_options(tmp_path))

    assert double.attempts == 1, "insufficient turns alone are not retried by default"
    [metrics] = report.metrics
    assert metrics["token_usage"]["agent"]["n_calls"] == 1
    assert metrics["stop_reason"] == "[INACTIVITY_TIMEOUT]"
    assert metrics["insufficient_agent_turns"] is True
    assert metrics["is_successful"] is False and metrics["is_task_successful"] is False
    assert metrics["auto_retry_count"] == 0 and "auto_retry_reasons" not in metrics
    assert [t["role"] for t in metrics["turns"]][:2] == ["agent", "user"]
    assert "db_state_match" in metrics and "clean_exit" in metrics, "signals are still computed"

    summary = (report.session_dir / "all_summary.txt").read_text(encoding="utf-8")
    lines = summary.splitlines()
    block_start = lines.index(f"====== {SCENARIO} ======:")
    assert STALL_LINE in lines[block_start:]
    assert lines.index(STALL_LINE) == lines.index(f"  Turns: {metrics['total_turns']}") + 1
    warning = lines.index("WARNING: 1 scenario(s) had fewer than 3 agent turn(s) "
                          "(likely stalled LLM / server hang) and were counted as failures.")
    assert lines[warning + 1] == f"Stalled scenarios: {SCENARIO}"
    assert lines[warning + 2] == "Run with --resume <TIMESTAMP> --min-agent-turns 3 to retry them."
    assert "Overall Success Rate: 0.00% (0/1 scenarios" in summary
    assert "  DB-State match:" not in summary and "  Clean exit:" not in summary, "skipped in per-signal buckets"
    assert report.success_rate == 0.0

    [row] = await _assert_files_and_rows_agree(report)
    assert row.insufficient_agent_turns is True and row.is_successful is False
    run = await _run_row(report.run_id)
    assert run.success_rate == 0.0 and run.successful_scenarios == 0


async def test_stalled_agent_is_retried_with_auto_resume_on_insufficient_turns(tmp_path: Path, monkeypatch) -> None:
    double = _use_agent_double(monkeypatch, replace(default_options("agent", "text"), stall_after=1))
    report = await _run(_options(tmp_path, auto_resume_on_insufficient_turns=True, max_auto_retries=1))

    assert double.attempts == 2
    [metrics] = report.metrics
    reason = "1 agent LLM response(s) < 3 (insufficient agent turns)"
    assert metrics["auto_retry_count"] == 1 and metrics["auto_retry_reasons"] == [reason]
    assert metrics["insufficient_agent_turns"] is True, "the last attempt is accepted whatever it gives"
    [killed] = _killed_dirs(report.session_dir, SCENARIO)
    assert AUTORETRY_DIR.search(killed.name).group(1) == "1"  # type: ignore[union-attr]
    assert (killed / "__KILLED__").is_file()
    discarded = _read_json(killed / "metrics.json")
    assert discarded["insufficient_agent_turns"] is True and discarded["auto_retry_count"] == 0
    [row] = await _assert_files_and_rows_agree(report)
    assert row.auto_retry_count == 1 and row.insufficient_agent_turns is True
    assert f"attempt discarded ({reason})" in (report.session_dir / "evaluation_log.txt").read_text(encoding="utf-8")


# --- 3. a peer that drops the connection (§9.1 [DISCONNECTED]) -------------------------------------


async def test_agent_disconnecting_mid_turn_ends_the_attempt_and_the_run(tmp_path: Path, monkeypatch) -> None:
    double = _use_agent_double(monkeypatch, replace(default_options("agent", "text"), disconnect_mid_turn=1))
    started = time.monotonic()
    # Long timers: only the disconnect itself may end this conversation quickly.
    report = await _run(_options(tmp_path, inactivity_timeout=30.0, duration=30))
    assert time.monotonic() - started < 15

    assert double.attempts == 1, "the agent spoke before dropping, so the attempt is kept"
    [metrics] = report.metrics
    assert metrics["stop_reason"] == "[DISCONNECTED]"
    assert metrics["clean_exit"] is False
    assert metrics["conversation_end_reason"] == "connection_lost"
    assert metrics["end_conversation_tool_called"] is False
    assert [t["role"] for t in metrics["turns"]] == ["agent", "user"]
    assert metrics["auto_retry_count"] == 0
    assert metrics["db_state_actual_hash"] is None and metrics["db_state_match"] is False
    assert metrics["is_successful"] is False
    scenario_dir = report.session_dir / SCENARIO
    assert "Stop reason: [DISCONNECTED]" in (scenario_dir / "conversation_log.txt").read_text(encoding="utf-8")
    assert _read_json(scenario_dir / "bot_logs_user" / "llm_context.json"), "the surviving side is still pulled"
    [row] = await _assert_files_and_rows_agree(report)
    assert row.stop_reason == "[DISCONNECTED]" and row.clean_exit is False and row.final_db is None


# --- 4. trials (§19.1 --trials) -------------------------------------------------------------------


class RecordingSink:
    """A progress sink that keeps every call, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def run_started(self, *, run_label: str, total: int, already_done: int) -> None:
        self.events.append(("run_started", run_label, total, already_done))

    def scenario_started(self, name: str) -> None:
        self.events.append(("scenario_started", name))

    def turn(self, name: str, role: str, text: str) -> None:
        self.events.append(("turn", name, role, text))

    def scenario_finished(self, name: str, metrics: dict[str, Any]) -> None:
        self.events.append(("scenario_finished", name, metrics))

    def run_finished(self, *, success_rate: float | None) -> None:
        self.events.append(("run_finished", success_rate))

    def without_turns(self) -> list[tuple[Any, ...]]:
        return [event for event in self.events if event[0] != "turn"]


def _assert_turns_inside_their_scenario(sink: RecordingSink) -> None:
    """Every turn event names the scenario run that is open at that moment (concurrency 1)."""
    open_name = None
    for event in sink.events:
        if event[0] == "scenario_started":
            assert open_name is None
            open_name = event[1]
        elif event[0] == "scenario_finished":
            assert event[1] == open_name
            open_name = None
        elif event[0] == "turn":
            assert event[1] == open_name, f"turn reported for {event[1]!r} while {open_name!r} runs"
    assert open_name is None


async def test_trials_get_their_own_directories_rows_and_pass_hat_k(tmp_path: Path) -> None:
    sink = RecordingSink()
    report = await _run(_options(tmp_path, scenarios=[SCENARIO, OTHER], trials=2, inactivity_timeout=5.0),
                        progress=sink)

    expected = [(name, trial) for name in (SCENARIO, OTHER) for trial in (1, 2)]
    assert [(Path(m["scenario_directory"]).name, m["trial"]) for m in report.metrics] == [
        (f"{name}__trial{trial}", trial) for name, trial in expected
    ]
    assert all(m["is_successful"] is True and m["stop_reason"] == "[EXIT]" for m in report.metrics)
    session = report.session_dir
    scenario_dirs = sorted(p.name for p in session.iterdir() if p.is_dir())
    assert scenario_dirs == sorted(f"{name}__trial{trial}" for name, trial in expected)
    for name, trial in expected:
        assert _read_json(session / f"{name}__trial{trial}" / "metrics.json")["trial"] == trial

    rows = await _assert_files_and_rows_agree(report)
    assert [row.trial for row in rows] == [1, 2, 1, 2]
    assert len({(row.scenario_name, row.trial) for row in rows}) == 4
    assert all(row.is_successful for row in rows)
    run = await _run_row(report.run_id)
    assert run.trials == 2 and run.total_scenarios == 4

    summary = report.summary_text
    block = summary[summary.index("\nevasite:\n"):].splitlines()
    assert "  pass^1: 100.00%" in block and "  pass^2: 100.00%" in block
    assert "Overall Success Rate: 100.00% (4/4 scenarios" in summary

    assert [e[1] for e in sink.events if e[0] == "scenario_started"] == [
        f"{name}__trial{trial}" for name, trial in expected
    ]
    _assert_turns_inside_their_scenario(sink)


# --- 5. the judge through the runner (§13) --------------------------------------------------------


JudgeStandIn = ChatCompletionsStandIn


@pytest.fixture
def judge_server(monkeypatch) -> Iterator[JudgeStandIn]:
    for name in ("NO_PROXY", "no_proxy"):  # never route the loopback stand-in through a proxy
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    server = JudgeStandIn(json.dumps({"score": 0.95, "reason": "ok"})).start()
    yield server
    server.stop()


async def test_judge_scores_every_scenario_with_the_key_from_the_env(tmp_path: Path, monkeypatch,
                                                                     judge_server: JudgeStandIn) -> None:
    monkeypatch.setenv("EVASITE_TEST_JUDGE_KEY", "sk-from-env-var")
    options = _options(tmp_path, scenarios=[SCENARIO, OTHER], inactivity_timeout=5.0, judge_url=judge_server.url,
                       judge_model="stand-in-judge", judge_api_key_name="EVASITE_TEST_JUDGE_KEY")
    report = await _run(options)

    assert len(judge_server.requests) == 2
    for request in judge_server.requests:
        assert request["path"] == "/v1/chat/completions"
        assert request["headers"]["Authorization"] == "Bearer sk-from-env-var"
        assert request["body"]["model"] == "stand-in-judge"
    sent_user_contents = [r["body"]["messages"][1]["content"] for r in judge_server.requests]
    for metrics in report.metrics:
        assert metrics["judge_score"] == 0.95 and metrics["judge_passed"] is True
        assert metrics["success_breakdown"]["excluded"] == ["judge_passed"]
        assert metrics["is_successful"] is True
        result = _read_json(Path(metrics["scenario_directory"]) / "judge_result.json")
        assert result["score"] == 0.95 and result["reason"] == "ok"
        judge_input = result["judge_input"]
        assert set(judge_input) == {"system_prompt", "user_content"}
        assert judge_input["user_content"] in sent_user_contents
        assert "<prediction>" in judge_input["user_content"]
        assert "<agent_context_history>" in judge_input["user_content"]
        assert judge_input["system_prompt"] == judge_server.requests[0]["body"]["messages"][0]["content"]

    summary = report.summary_text
    assert "  Judge score mean:            0.950 (across 2 scenarios)" in summary.splitlines()
    assert "  Judge passed (>= threshold): 100.00% (2/2 scenarios)" in summary.splitlines()
    assert summary.count("    Judge score: 0.95\n") == 2 and summary.count("    Judge passed: True\n") == 2

    rows = await _assert_files_and_rows_agree(report)
    assert [row.judge_score for row in rows] == [0.95, 0.95]
    run_args = (report.session_dir / "run_args.json").read_text(encoding="utf-8")
    assert "sk-from-env-var" not in run_args
    assert _read_json(report.session_dir / "run_args.json")["invocations"][0]["parsed_args"]["judge_api_key"] is None
    run = await _run_row(report.run_id)
    assert "sk-from-env-var" not in json.dumps(run.parsed_args)


async def test_inline_judge_key_is_sent_but_never_stored(tmp_path: Path, monkeypatch,
                                                         judge_server: JudgeStandIn) -> None:
    monkeypatch.setenv("EVASITE_TEST_JUDGE_KEY", "sk-from-env-var")
    options = _options(tmp_path, inactivity_timeout=5.0, judge_url=judge_server.url, judge_model="stand-in-judge",
                       judge_api_key="sk-inline-secret", judge_api_key_name="EVASITE_TEST_JUDGE_KEY")
    # What ``manage.py run_eval`` hands over: its sys.argv, with the key in both spellings.
    argv = ["manage.py", "run_eval", "--judge-url", judge_server.url, "--judge-api-key", "sk-inline-secret",
            "--judge-api-key=sk-inline-secret", "--judge-api-key-name", "EVASITE_TEST_JUDGE_KEY"]
    report = await _run(options, argv=argv)

    [request] = judge_server.requests
    assert request["headers"]["Authorization"] == "Bearer sk-inline-secret", "the inline key wins over the env"
    [metrics] = report.metrics
    assert metrics["judge_score"] == 0.95 and metrics["judge_passed"] is True

    session = report.session_dir
    record = _read_json(session / "run_args.json")["invocations"][0]
    assert record["parsed_args"]["judge_api_key"] == REDACTED == "<redacted>"
    assert record["parsed_args"]["judge_api_key_name"] == "EVASITE_TEST_JUDGE_KEY"
    assert record["argv"] == ["manage.py", "run_eval", "--judge-url", judge_server.url, "--judge-api-key", REDACTED,
                              f"--judge-api-key={REDACTED}", "--judge-api-key-name", "EVASITE_TEST_JUDGE_KEY"]
    for path in session.rglob("*"):
        if path.is_file() and path.suffix in {".json", ".txt"}:
            assert "sk-inline-secret" not in path.read_text(encoding="utf-8", errors="replace"), path
    run = await _run_row(report.run_id)
    assert run.parsed_args["judge_api_key"] == "<redacted>"
    assert "sk-inline-secret" not in json.dumps(run.parsed_args)
    await _assert_files_and_rows_agree(report)


# --- 6. the agent under test as a bot server (--agent-url) ----------------------------------------


def _stop_process(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=3)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


async def _listening_url(log: Path, process: subprocess.Popen, deadline: float) -> str:
    while time.monotonic() < deadline:
        match = re.search(r"Listening on (ws://\S+)", log.read_text(errors="replace"))
        if match:
            return match.group(1)
        if process.poll() is not None:
            break
        await asyncio.sleep(0.05)
    raise AssertionError(f"run_bot never listened (rc={process.poll()}):\n{log.read_text(errors='replace')}")


async def test_agent_behind_agent_url_is_scored_on_the_hash_it_reports(tmp_path: Path) -> None:
    log = tmp_path / "agent_bot.log"
    env = {**os.environ, "EVASITE_PIPECAT_LOG_LEVEL": "WARNING"}
    command = [sys.executable, "manage.py", "run_bot", "--role", "agent", "--port", "0", "--modality", "text",
               "--model", "gold-replay"]
    with log.open("wb") as out:  # a file, never an undrained pipe
        process = warm_python.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        url = await _listening_url(log, process, time.monotonic() + 30)
        port = int(url.rsplit(":", 1)[1].strip("/"))
        report = await _run(_options(tmp_path / "out", agent_url=f"ws://127.0.0.1:{port}", inactivity_timeout=5.0))
    finally:
        _stop_process(process)

    [metrics] = report.metrics
    assert metrics["stop_reason"] == "[EXIT]" and metrics["is_successful"] is True
    expected = metrics["db_state_expected_hash"]
    assert expected == attempt_module.expected_hash_of(get_eval_scenario(SCENARIO))
    assert metrics["db_state_actual_hash"] == expected and metrics["db_state_match"] is True
    scenario_dir = report.session_dir / SCENARIO
    reported = (scenario_dir / "final_scenario_db_hash.txt").read_text(encoding="utf-8")
    assert reported == f"db_hash: {expected}\n", "the scored hash is the one the bot reported"
    metadata = _read_json(scenario_dir / "scenario_config" / "metadata.json")
    assert metadata["expected_db_hash"] == expected

    [row] = await _assert_files_and_rows_agree(report)
    assert row.final_db is not None, "the bot answered include_db, so the final DB is stored"
    assert db_hash(row.final_db) == expected
    assert _read_json(scenario_dir / "final_scenario_db.json") == row.final_db
    run = await _run_row(report.run_id)
    assert run.parsed_args["agent_url"] == f"ws://127.0.0.1:{port}"


async def test_agent_that_lies_about_its_hash_fails_db_state_match(tmp_path: Path) -> None:
    """The bot returns its final DB too: its reported hash is checked against it (issue 11 #4)."""
    expected = attempt_module.expected_hash_of(get_eval_scenario(SCENARIO))
    liar = double_host(default_options("agent", "text"), db_hasher=lambda db: expected)  # claims the gold hash
    server = await serve_websocket(liar)
    try:
        report = await _run(_options(tmp_path / "out", agent_url=server.url, inactivity_timeout=5.0))
    finally:
        await server.close()

    [metrics] = report.metrics
    assert metrics["db_state_actual_hash"] == expected, "the reported hash is what the bot said"
    assert metrics["db_state_match"] is False and metrics["is_successful"] is False
    final_db = _read_json(report.session_dir / SCENARIO / "final_scenario_db.json")
    assert metrics["db_hash_disagreement"] == {"reported": expected, "computed": db_hash(final_db)}
    assert db_hash(final_db) != expected
    [row] = await _assert_files_and_rows_agree(report)
    assert row.metrics["db_hash_disagreement"]["computed"] == db_hash(final_db)


# --- 7. the progress sink ------------------------------------------------------------------------


async def test_progress_sink_sees_the_run_in_order(tmp_path: Path) -> None:
    sink = RecordingSink()
    report = await _run(_options(tmp_path, scenarios=[SCENARIO, OTHER], inactivity_timeout=5.0), progress=sink)

    assert sink.events[0] == ("run_started", report.session_dir.name, 2, 0)
    assert sink.without_turns() == [
        ("run_started", report.session_dir.name, 2, 0),
        ("scenario_started", SCENARIO),
        ("scenario_finished", SCENARIO, report.metrics[0]),
        ("scenario_started", OTHER),
        ("scenario_finished", OTHER, report.metrics[1]),
        ("run_finished", 1.0),
    ]
    assert report.success_rate == 1.0
    _assert_turns_inside_their_scenario(sink)
    for name, metrics in zip((SCENARIO, OTHER), report.metrics):
        turns = [(e[2], e[3]) for e in sink.events if e[0] == "turn" and e[1] == name]
        assert turns and turns == [(t["role"], t["text"]) for t in metrics["turns"]]
    await _assert_files_and_rows_agree(report)


# --- 8. conformance of the attempt's timing and files (issue 11 #6) ---------------------------------


async def test_log_header_exists_from_the_start_and_duration_starts_at_the_conversation(tmp_path: Path,
                                                                                          monkeypatch) -> None:
    """§3.2: conversation_log.txt's header is written at step 1; scenario_duration starts at step 10,
    so a slow setup (2 s here) is not in it."""
    from voice.bots.host import BotHost

    class SlowSetupHost(BotHost):
        async def _apply_initialization(self, args: dict) -> dict:
            await asyncio.sleep(2.0)
            return await super()._apply_initialization(args)

    def build(spec: PeerSpec, *, modality: str):
        if spec.role != "agent":
            return real_build_endpoint(spec, modality=modality)
        double = double_host(replace(default_options("agent", "text"), modality=modality))
        return InProcessEndpoint(SlowSetupHost(double.brain), label="slow-setup")

    headers: list[str] = []

    class HeaderReader(RecordingSink):
        def turn(self, name: str, role: str, text: str) -> None:
            if not headers:
                headers.append((tmp_path / "out" / self.events[0][1] / name / "conversation_log.txt").read_text())
            super().turn(name, role, text)

    monkeypatch.setattr(attempt_module, "build_endpoint", build)
    report = await _run(_options(tmp_path / "out", inactivity_timeout=5.0), progress=HeaderReader())

    [metrics] = report.metrics
    assert headers and headers[0].startswith("RTVI Evaluation Bridge - Conversation Log\n" + "=" * 80 + "\nStart Time: ")
    final = (report.session_dir / SCENARIO / "conversation_log.txt").read_text()
    assert final.startswith(headers[0]) and "Stop reason: [EXIT]" in final, "the full log keeps the header"
    assert metrics["duration_seconds"] <= metrics["scenario_duration"] < metrics["duration_seconds"] + 1.0


async def test_trials_are_told_apart_in_summary_blocks_and_csv_rows(tmp_path: Path) -> None:
    report = await _run(_options(tmp_path, trials=2, inactivity_timeout=5.0))
    summary = report.summary_text
    assert f"====== {SCENARIO}__trial1 ======:" in summary and f"====== {SCENARIO}__trial2 ======:" in summary
    rows = (report.session_dir / "all_latencies.csv").read_text().splitlines()[1:]
    assert {row.split(",", 1)[0] for row in rows} == {f'"{SCENARIO}__trial1"', f'"{SCENARIO}__trial2"'}
