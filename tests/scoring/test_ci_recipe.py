"""docs/ci.md's workflow, run for real: its commands are read out of the document (GitHub's `run:`
steps, which GitLab's `script:` must repeat word for word) and run in a scratch workspace, as a
CI job would, with evasite's built-in bot as the agent under test, three scenarios and a baseline
made on the spot. Only the steps that install things are skipped (this checkout is set up)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from junitparser import JUnitXml

from scenarios.data_root import get_eval_data_root
from tests.services import free_port
from tests.sqlite_template import migrated_sqlite
from tests import warm_python

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "ci.md"
SCENARIOS = ["eva_airline__voluntary_date_change", "eva_airline__1_1_3", "eva_airline__4_2_5"]
INSTALL_STEPS = {"Install evasite"}  # done by scripts/setup.sh before the tests
RUN_STEPS = ["Start the agent under test", "Harness self-test", "Gate against the baseline"]


def _workflows() -> tuple[dict, dict]:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 2, "docs/ci.md holds the GitHub workflow, then the GitLab job"
    return yaml.safe_load(blocks[0]), yaml.safe_load(blocks[1])


def _github_steps() -> tuple[dict[str, str], dict[str, str]]:
    github, _ = _workflows()
    job = github["jobs"]["evaluate"]
    runs = {step["name"]: step["run"] for step in job["steps"] if "run" in step}
    assert set(runs) == INSTALL_STEPS | set(RUN_STEPS), "every command of the workflow is run or knowingly skipped"
    return runs, {k: str(v) for k, v in job["env"].items()}


def test_gitlab_runs_the_same_commands_as_github() -> None:
    runs, github_env = _github_steps()
    _, gitlab = _workflows()
    job = gitlab["evaluate"]
    assert [script.strip() for script in job["script"]] == [runs[name].strip() for name in RUN_STEPS]
    assert job["before_script"][-1] == runs["Install evasite"]
    assert set(job["variables"]) >= set(github_env) - {"AGENT_API_KEY"}
    assert job["artifacts"]["reports"]["junit"] == "reports/junit.xml"


def _step(script: str, workspace: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    # GitHub's default shell for `run:` on Linux.
    return warm_python.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=workspace,
                           env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def workspace(tmp_path: Path):
    """A CI workspace: evasite checked out beside the job's files, its own database."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "evasite").symlink_to(REPO)
    env = {**os.environ, "EVASITE_SQLITE_PATH": str(tmp_path / "db.sqlite3"), "EVAL_DATA_ROOT": str(get_eval_data_root())}
    env.pop("GITHUB_STEP_SUMMARY", None)
    migrated_sqlite(tmp_path / "db.sqlite3")
    yield ws, env
    pid_file = ws / "agent.pid"
    if pid_file.exists():  # the workflow's background agent, by the pid it recorded
        try:
            os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
        except ProcessLookupError:
            pass


@pytest.mark.slow(seconds=110)
def test_the_workflow_commands_gate_a_real_run(workspace) -> None:
    ws, base_env = workspace
    runs, doc_env = _github_steps()
    baseline = warm_python.run(
        [sys.executable, "manage.py", "run_eval", "--scenarios", *SCENARIOS, "--modality", "text",
         "--agent-model", "gold-replay", "--output-dir", str(ws / "baseline_runs")],
        cwd=REPO, env=base_env, capture_output=True, text=True, timeout=600)
    assert baseline.returncode == 0, baseline.stderr
    (session,) = (ws / "baseline_runs").glob("eval_*")
    port = free_port()
    env = {**base_env, **{k: v for k, v in doc_env.items() if "${{" not in v},
           "SCENARIOS": f"--scenarios {' '.join(SCENARIOS)}", "AGENT_PORT": str(port),
           "AGENT_FLAGS": f"--agent-url ws://127.0.0.1:{port}", "BASELINE": str(session),
           "GITHUB_STEP_SUMMARY": str(ws / "step_summary.md")}
    assert env["GATE_FLAGS"] == "--modality text --trials 3"  # the document's own gate settings

    started = _step(runs["Start the agent under test"], ws, env, timeout=120)
    assert started.returncode == 0, started.stdout + started.stderr + (ws / "agent.log").read_text()
    selftest = _step(runs["Harness self-test"], ws, env)
    assert selftest.returncode == 0, selftest.stderr

    gate = _step(runs["Gate against the baseline"], ws, env)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert "Gate: no regression at α = 0.05" in gate.stdout
    xml = JUnitXml.fromfile(str(ws / "reports" / "junit.xml"))
    assert (xml.tests, xml.failures) == (9, 0)  # 3 scenarios x 3 trials
    assert "**Gate: no regression** at α = 0.05" in (ws / "step_summary.md").read_text()

    # The same step with an agent that does nothing: the gate fails the job.
    regressed = _step(runs["Gate against the baseline"], ws, {**env, "AGENT_FLAGS": "--agent-model null"})
    assert regressed.returncode == 3, regressed.stdout + regressed.stderr
    assert "Gate: REGRESSION at α = 0.05" in regressed.stdout
    xml = JUnitXml.fromfile(str(ws / "reports" / "junit.xml"))
    assert (xml.tests, xml.failures) == (9, 9)
