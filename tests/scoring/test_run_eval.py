"""The runner end to end on the built-in offline models (text modality): scores, rows and files
agree; the null agent floor; usage errors; and a SIGKILLed run resumed without loss."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async

from scoring.core.canonical import db_hash
from scoring.models import Run, ScenarioResult
from scoring.runs.options import RunOptions
from scoring.runs.runner import RunError, run_evaluation
from tests.manage_cli import manage, manage_side_by_side
from tests.services import free_port
from tests.sqlite_template import migrated_sqlite
from tests import warm_python

REPO = Path(__file__).resolve().parents[2]
NO_WRITE = {"eva_airline__5_2_5", "eva_airline__7_1_1", "eva_airline__7_2_2", "eva_airline__7_2_8",
            "eva_airline__7_3_1", "eva_airline__7_4_1"}


def _text_options(tmp_path: Path, **overrides) -> RunOptions:
    values = {"domain": "eva_airline", "modality": "text", "concurrency": 4, "output_dir": str(tmp_path)}
    values.update(overrides)
    return RunOptions(**values)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
async def test_gold_replay_scores_all_50_and_rows_agree_with_files(tmp_path: Path) -> None:
    report = await run_evaluation(_text_options(tmp_path))
    assert len(report.metrics) == 50
    assert all(m["is_successful"] is True and m["stop_reason"] == "[EXIT]" for m in report.metrics)
    assert "Overall Success Rate: 100.00% (50/50 scenarios" in report.summary_text
    assert "Null-agent floor: 6 of 50" in report.summary_text

    session = report.session_dir
    assert json.loads((session / "all_metrics.json").read_text()) == report.metrics
    assert (session / "all_summary.txt").read_text() == report.summary_text
    run = await sync_to_async(Run.objects.get)(pk=report.run_id)
    assert run.status == "finished" and run.completed_scenarios == 50 and run.success_rate == 1.0
    rows = await sync_to_async(list)(ScenarioResult.objects.filter(run=run).order_by("position"))
    assert [r.scenario_name for r in rows] == [m["scenario_name"] for m in report.metrics]
    for row in rows:
        on_disk = json.loads((Path(row.directory) / "metrics.json").read_text())
        assert row.metrics == on_disk
        assert db_hash(row.final_db) == on_disk["db_state_actual_hash"] == on_disk["db_state_expected_hash"]
        assert row.metrics["token_usage"]["agent"]["n_calls"] >= 3


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow(seconds=20)
async def test_null_agent_matches_exactly_the_six_no_write_scenarios(tmp_path: Path) -> None:
    report = await run_evaluation(_text_options(tmp_path, agent_model="null", concurrency=10))
    matched = {m["scenario_name"] for m in report.metrics if m["db_state_match"]}
    assert matched == NO_WRITE
    assert all(m["clean_exit"] is True for m in report.metrics)


@pytest.mark.django_db(transaction=True)
async def test_unknown_scenario_and_empty_domain_are_operator_errors(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="Unknown scenario"):
        await run_evaluation(_text_options(tmp_path, scenarios=["eva_airline__nope"]))
    with pytest.raises(RunError, match="No scenarios found for domain 'nope'."):
        await run_evaluation(_text_options(tmp_path, domain="nope"))
    with pytest.raises(RunError, match="does not exist"):
        await run_evaluation(_text_options(tmp_path, resume="19990101_000000"))


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    env = {**os.environ, "EVASITE_SQLITE_PATH": str(tmp_path / "db.sqlite3")}
    cases = (
        (["--judge-threshold", "1.5"], "--judge-threshold must be <= 1"),
        (["--min-agent-turns", "-1"], "--min-agent-turns must be >= 0"),
        (["--duration", "0"], "--duration must be > 0"),
        (["--conversation-end-policy", "sometimes"], "--conversation-end-policy must be one of tool-only, valid-terminal-state"),
        (["--concurrency", "2", "--agent-url", "ws://127.0.0.1:9"], "--concurrency > 1 cannot be used with --agent-url"),
        (["--agent-model", "gpt-imaginary"], "--agent-model: unknown agent model 'gpt-imaginary'"),
        (["--scenarios", "eva_airline__1_1_3", "eva_airline__1_1_3"], "names a scenario more than once: eva_airline__1_1_3"),
        (["--user-model", "gold-replay"], "--user-model: unknown user model 'gold-replay'"),
        (["--agent-model", "m", "--agent-llm-url", "http://203.0.113.5/v1", "--agent-api-key-name", "UNSET_KEY_VAR"],
         "http://203.0.113.5/v1 is not on loopback and environment variable 'UNSET_KEY_VAR' is unset"),
    )
    runs = manage_side_by_side([(["run_eval", "--output-dir", str(tmp_path), *flags], env) for flags, _ in cases])
    for (flags, message), (proc, _) in zip(cases, runs):
        assert proc.returncode == 2, (flags, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("run_eval: error: ") and message in lines[0], (flags, proc.stderr)


def test_unreachable_endpoints_and_data_root_exit_1_with_one_line(tmp_path: Path) -> None:
    """Checked before the first scenario: no traceback, no 0% run, the URL named (issue 11 #3)."""
    env = {**os.environ, "EVASITE_SQLITE_PATH": str(migrated_sqlite(tmp_path / "db.sqlite3"))}
    ws_url, llm_url = f"ws://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}/v1"
    cases = (
        (["--agent-url", ws_url], {}, f"--agent-url {ws_url}: cannot reach the agent bot (connection refused)"),
        (["--user-model", "m", "--user-llm-url", llm_url], {},
         f"--user-llm-url {llm_url}: cannot reach the server (connection refused); tried GET models"),
        (["--skip-checks"], {"EVAL_DATA_ROOT": str(tmp_path / "nowhere")}, f"EVAL_DATA_ROOT: eva_airline data root {tmp_path / 'nowhere'} does not exist"),
    )
    runs = manage_side_by_side([(["run_eval", "--output-dir", str(tmp_path), "--modality", "text", "--scenarios",
                                "eva_airline__1_1_3", *flags], {**env, **extra_env}) for flags, extra_env, _ in cases])
    for (flags, _, message), (proc, elapsed) in zip(cases, runs):
        assert proc.returncode == 1, (flags, proc.stderr)
        errors = [line for line in proc.stderr.splitlines() if line.startswith("run_eval: error: ")]
        assert errors == [f"run_eval: error: {message}"] or (len(errors) == 1 and message in errors[0]), proc.stderr
        assert "Traceback" not in proc.stderr and "CommandError" not in proc.stderr
        assert elapsed < 90  # refused at once, not after a connect timeout (the start-up alone is seconds here)
    assert not list(tmp_path.glob("eval_*")), "nothing was run"


WALL_CLOCK = re.compile(r"^(Total Duration|  Duration|  Turns/min|    (Mean|P50|P95|Min|Max)|  (Mean|P50|P95|Min|Max)):")


def _without_wall_clock(summary: str) -> list[str]:
    return [line for line in summary.splitlines() if not WALL_CLOCK.match(line)]


def _gone(pid: int) -> bool:
    """Ended (reaped, or a zombie its new parent has not reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


@pytest.mark.slow
@pytest.mark.parametrize("processes", ["1", "2"], ids=["in-process", "forked-workers"])
def test_sigkilled_run_resumes_without_loss_or_double_count(tmp_path: Path, processes: str) -> None:
    """The coordinator killed part-way, its attempts in this process or in forked workers (which
    die with it: none may go on writing while the resume runs)."""
    names = ["eva_airline__voluntary_date_change", "eva_airline__1_1_3", "eva_airline__1_1_5",
             "eva_airline__2_1_2", "eva_airline__2_1_6", "eva_airline__3_1_5", "eva_airline__4_2_5",
             "eva_airline__5_1_3", "eva_airline__5_2_5", "eva_airline__6_1_1", "eva_airline__escalation_edge_case",
             "eva_airline__7_4_1"]
    env = {**os.environ, "EVASITE_SQLITE_PATH": str(migrated_sqlite(tmp_path / "db.sqlite3"))}
    common = ["run_eval", "--modality", "text", "--scenarios", *names, "--concurrency", "2", "--processes", processes]

    reference = manage(*common, "--output-dir", str(tmp_path / "reference"), env=env)
    assert reference.returncode == 0, reference.stderr
    reference_summary = next((tmp_path / "reference").glob("eval_*/all_summary.txt")).read_text()

    out = tmp_path / "killed"
    proc = warm_python.Popen([sys.executable, "manage.py", *common, "--output-dir", str(out)], cwd=REPO, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(out.glob("eval_*/*/metrics.json"))) < 3:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    session = next(out.glob("eval_*"))
    workers = re.search(r"worker process\(es\): pids (\d+), (\d+) \(forked", (session / "evaluation_log.txt").read_text())
    assert (workers is not None) == (processes == "2")
    if workers is not None:
        deadline = time.monotonic() + 10
        while not all(_gone(int(pid)) for pid in workers.groups()):
            assert time.monotonic() < deadline, "a forked worker outlived its killed coordinator"
            time.sleep(0.01)
    done_before = len(list(session.glob("*/metrics.json")))
    assert 3 <= done_before < len(names), "the run must be killed part-way"
    assert not (session / "all_summary.txt").exists()

    resumed = manage(*common, "--output-dir", str(out), "--resume", session.name.removeprefix("eval_"), env=env)
    assert resumed.returncode == 0, resumed.stderr

    live_dirs = sorted(p.name for p in session.iterdir() if p.is_dir() and ".killed." not in p.name)
    assert live_dirs == sorted(names)
    for killed in (p for p in session.iterdir() if ".killed." in p.name):
        assert (killed / "__KILLED__").exists()
    all_metrics = json.loads((session / "all_metrics.json").read_text())
    assert [m["scenario_name"] for m in all_metrics] == names
    assert _without_wall_clock((session / "all_summary.txt").read_text()) == _without_wall_clock(reference_summary)
    invocations = json.loads((session / "run_args.json").read_text())["invocations"]
    assert len(invocations) == 2 and invocations[1]["resumed_from_invocation"] == 0
    assert "=== RESUMING run " in (session / "evaluation_log.txt").read_text()

    assert stored_rows(env, session) == ["finished", *sorted(names)]  # one row per scenario


def stored_rows(env: dict[str, str], session: Path) -> list[str]:
    """The status of the run of ``session``, then the scenario name of each of its rows, sorted."""
    done = warm_python.run(
        [sys.executable, "-c", "import django,os;os.environ.setdefault('DJANGO_SETTINGS_MODULE','evasite.settings');"
         "django.setup();from scoring.models import Run;"
         f"r=Run.objects.get(session_dir__endswith='{session.name}');"
         "print(r.status, *sorted(x.scenario_name for x in r.results.all()))"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    return done.stdout.split()


def test_check_resume_command_reports_the_killed_run(tmp_path: Path) -> None:
    session = tmp_path / "eval_20260101_000000"
    done = session / "eva_airline__1_1_3"
    done.mkdir(parents=True)
    (done / "metrics.json").write_text(json.dumps({"total_turns": 7, "stop_reason": "[EXIT]",
                                                   "token_usage": {"agent": {"n_calls": 5}}}))
    flight = session / "eva_airline__1_1_4"
    (flight / "scenario_config").mkdir(parents=True)
    env = {**os.environ, "EVASITE_SQLITE_PATH": str(tmp_path / "db.sqlite3")}
    proc = manage("check_resume", str(session), env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        f"Eval dir : {session}\n"
        "Min agent turns: 0\n"
        "Total scenarios: 2  (1 completed, 1 would re-run, 0 fresh)\n"
        "\n"
        "Would re-run (1):\n"
        "  eva_airline__1_1_4  [no metrics.json (in-flight)]\n"
    )
    assert manage("check_resume", str(tmp_path / "absent"), env=env).returncode == 1


@pytest.mark.django_db(transaction=True)
async def test_resume_with_a_narrower_selection_keeps_rows_and_files_in_step(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # a relative --output-dir must still give absolute stored paths
    names = ["eva_airline__1_1_3", "eva_airline__1_1_4", "eva_airline__5_2_5"]
    first = await run_evaluation(RunOptions(scenarios=names, modality="text", output_dir="out"))
    assert first.session_dir.is_absolute()
    resumed = await run_evaluation(RunOptions(scenarios=names[:2], modality="text", output_dir="out",
                                              resume=first.session_dir.name.removeprefix("eval_")))
    assert resumed.run_id == first.run_id and resumed.loaded == 2 and resumed.executed == 0
    rows = await sync_to_async(list)(ScenarioResult.objects.filter(run_id=first.run_id).order_by("position"))
    assert [r.scenario_name for r in rows] == names[:2]
    assert all(Path(r.directory).is_absolute() and Path(r.directory).is_dir() for r in rows)
    assert [m["scenario_name"] for m in json.loads((first.session_dir / "all_metrics.json").read_text())] == names[:2]
    run = await sync_to_async(Run.objects.get)(pk=first.run_id)
    assert run.completed_scenarios == 2 and run.summary_text == resumed.summary_text


def test_list_flags_print_the_registry_like_list_scenarios() -> None:
    from io import StringIO

    from django.core.management import call_command

    def output(*args: str) -> str:
        out = StringIO()
        call_command(*args, stdout=out)
        return out.getvalue()

    listing = output("run_eval", "--list")
    assert listing == output("list_scenarios")
    assert listing.startswith("\neva_airline domain:\n  - eva_airline__1_1_3\n") and listing.endswith("voluntary_date_change\n")
    assert output("run_eval", "--list-domains") == "Available domains:\n  - eva_airline (50 scenarios)\n"
