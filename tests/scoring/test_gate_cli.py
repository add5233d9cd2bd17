"""``run_eval``'s gate and exit codes from the command line (text modality, built-in models):
0 finished, 1 error, 2 usage, 3 regression, 130 interrupted."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from junitparser import JUnitXml

from tests.manage_cli import REPO, manage, manage_side_by_side
from tests.sqlite_template import migrated_sqlite

FIVE = ["eva_airline__voluntary_date_change", "eva_airline__1_1_3", "eva_airline__2_1_2",
        "eva_airline__3_1_5", "eva_airline__4_2_5"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    values = {**os.environ, "EVASITE_SQLITE_PATH": str(tmp_path / "db.sqlite3")}
    values.pop("GITHUB_STEP_SUMMARY", None)
    migrated_sqlite(tmp_path / "db.sqlite3")
    return values


def _run_eval_args(out: Path, *flags: str) -> list[str]:
    return ["run_eval", "--scenarios", *FIVE, "--modality", "text", "--concurrency", "4", "--output-dir", str(out),
            *flags]


def _run_eval(out: Path, *flags: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return manage(*_run_eval_args(out, *flags), env=env)


@pytest.mark.slow
def test_gold_baseline_gates_gold_through_and_fails_the_null_agent(tmp_path: Path, env: dict[str, str]) -> None:
    out = tmp_path / "out"
    first = _run_eval(out, env=env)
    assert first.returncode == 0, first.stderr
    (baseline,) = out.glob("eval_*")
    stamp = baseline.name.removeprefix("eval_")

    same = _run_eval(out, "--baseline", stamp, "--fail-on-regression", env=env)
    assert same.returncode == 0, same.stdout + same.stderr
    assert f"Baseline {baseline.name}: 5 scenario(s) in common, 1 trial(s) each" in same.stdout
    assert "Gate: no regression at α = 0.05" in same.stdout

    junit = tmp_path / "junit.xml"
    worse = _run_eval(out, "--agent-model", "null", "--baseline", stamp, "--fail-on-regression",
                      "--junit-xml", str(junit), "--summary-md", str(tmp_path / "summary.md"), env=env)
    assert worse.returncode == 3, worse.stdout + worse.stderr
    assert "Gate: REGRESSION at α = 0.05" in worse.stdout
    xml = JUnitXml.fromfile(str(junit))
    assert (xml.tests, xml.failures, xml.errors) == (5, 5, 0)
    assert "**Gate: regression**" in (tmp_path / "summary.md").read_text()

    # Without --fail-on-regression the same comparison is reported and the run still exits 0.
    told = _run_eval(out, "--agent-model", "null", "--baseline", str(baseline), env=env)
    assert told.returncode == 0 and "Gate: REGRESSION at α = 0.05" in told.stdout


def test_gate_usage_errors_exit_2_and_a_missing_baseline_exits_1_before_running(tmp_path: Path,
                                                                                env: dict[str, str]) -> None:
    out = tmp_path / "out"
    cases = (
        (["--fail-on-regression"], "--fail-on-regression needs --baseline"),
        (["--baseline", "x", "--regression-alpha", "0.6"], "--regression-alpha must be <= 0.5"),
        (["--baseline", "x", "--regression-alpha", "0"], "--regression-alpha must be > 0"),
    )
    *refused, (missing, _) = manage_side_by_side(
        [(_run_eval_args(out, *flags), env) for flags, _ in cases]
        + [(_run_eval_args(out, "--baseline", "19990101_000000"), env)])
    for (flags, message), (proc, _) in zip(cases, refused):
        assert proc.returncode == 2, (flags, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"run_eval: error: {message}"), (flags, proc.stderr)
    assert missing.returncode == 1
    assert missing.stderr.strip().startswith("run_eval: error: --baseline 19990101_000000: no such run")
    assert not out.exists() or not list(out.glob("eval_*")), "nothing was run"


@pytest.mark.slow(seconds=30)
def test_ctrl_c_exits_130_and_says_how_to_resume(tmp_path: Path, env: dict[str, str]) -> None:
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "manage.py", "run_eval", "--domain", "eva_airline", "--modality", "text",
                             "--output-dir", str(out)], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not list(out.glob("eval_*/*/metrics.json")):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "run_eval: error: interrupted; continue it with `run_eval --resume <TS>`" in stderr
