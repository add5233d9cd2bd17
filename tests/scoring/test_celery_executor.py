"""The celery executor against real parts: redis-server (broker, channel layer), a PostgreSQL
cluster, real ``celery worker`` processes and ``run_eval`` processes. The same run under either
executor gives the same ``all_summary.txt`` (wall-clock lines aside) and the same rows."""
from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services import REPO, CeleryStack
from tests import warm_python

pytestmark = pytest.mark.slow(seconds=21)  # runs on real Celery workers

SCENARIOS = ["eva_airline__1_1_3", "eva_airline__2_1_2", "eva_airline__voluntary_date_change",
             "eva_airline__1_2_1"]
# Lines that measure elapsed time or latency: they differ between any two runs.
WALL_CLOCK = re.compile(r"Duration|Turns/min|^\s*(Mean|P50|P95|Min|Max)\b|latency|_ms\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CeleryStack]:
    stack = CeleryStack(tmp_path_factory.mktemp("celery"))
    try:
        yield stack.start()
    finally:
        stack.stop()


def _comparable(summary: str) -> list[str]:
    return [line for line in summary.splitlines() if not WALL_CLOCK.search(line)]


ROWS = """
import json
from scoring.models import Run
run = Run.objects.get(session_dir={session!r})
print(json.dumps({{"status": run.status, "executor": run.executor, "completed": run.completed_scenarios,
                  "rows": [[r.scenario_name, r.trial, r.metrics == json.load(open(r.directory + "/metrics.json"))]
                           for r in run.results.order_by("position", "trial")]}}))
"""


def run_rows(stack: CeleryStack, session: Path) -> dict:
    return json.loads(stack.python(ROWS.format(session=str(session))))


def test_same_summary_under_either_executor(stack: CeleryStack) -> None:
    flags = ["--scenarios", *SCENARIOS, "--modality", "text", "--trials", "2"]
    local = stack.run_eval(*flags, "--executor", "local", "--concurrency", "2", log_name="local.log")
    assert local.wait(timeout=240) == 0, (stack.root / "local.log").read_text()[-3000:]
    workers = stack.workers().start(2)
    try:
        workers.wait_ready()
        celery = stack.run_eval(*flags, "--executor", "celery", log_name="celery.log")
        assert celery.wait(timeout=240) == 0, (stack.root / "celery.log").read_text()[-3000:]
    finally:
        workers.stop()
    local_dir, celery_dir = stack.session_dirs()
    local_summary = (local_dir / "all_summary.txt").read_text()
    celery_summary = (celery_dir / "all_summary.txt").read_text()
    assert _comparable(celery_summary) == _comparable(local_summary)
    assert "Overall Success Rate" in celery_summary
    # Both workers took part, and the coordinator showed the usual progress display.
    assert all("succeeded" in workers.log(index) for index in range(2))
    display = (stack.root / "celery.log").read_text()
    assert display.count("PASS eva_airline__") == 2 * len(SCENARIOS) and "Finished 8/8" in display
    local_metrics = json.loads((local_dir / "all_metrics.json").read_text())
    celery_metrics = json.loads((celery_dir / "all_metrics.json").read_text())
    assert [(m["scenario_name"], m["is_successful"], m["db_state_actual_hash"]) for m in celery_metrics] == \
        [(m["scenario_name"], m["is_successful"], m["db_state_actual_hash"]) for m in local_metrics]
    rows = run_rows(stack, celery_dir)
    assert rows["status"] == "finished" and rows["executor"] == "celery" and rows["completed"] == 8
    assert rows["rows"] == [[name, trial, True] for name in SCENARIOS for trial in (1, 2)]
    assert run_rows(stack, local_dir)["executor"] == "local"


def test_celery_executor_refuses_storage_workers_cannot_share(stack: CeleryStack, tmp_path: Path) -> None:
    sqlite_env = {key: value for key, value in stack.env.items() if key != "DATABASE_URL"}
    sqlite_env.update(EVASITE_SQLITE_PATH=str(tmp_path / "db.sqlite3"), EVASITE_EXECUTOR="celery")
    check = warm_python.run([sys.executable, "manage.py", "check"], cwd=REPO, env=sqlite_env,
                            capture_output=True, text=True, timeout=120)
    assert check.returncode != 0 and "DATABASE_URL pointing at PostgreSQL" in check.stderr
    run = warm_python.run([sys.executable, "manage.py", "run_eval", "--scenarios", SCENARIOS[0], "--modality", "text",
                          "--output-dir", str(tmp_path / "out")], cwd=REPO, env=sqlite_env,
                          capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "DATABASE_URL pointing at PostgreSQL" in run.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("eval_*"))
    # A scenario longer than the cap the broker's visibility timeout assumes is refused too.
    capped = warm_python.run([sys.executable, "manage.py", "run_eval", "--scenarios", SCENARIOS[0], "--modality",
                             "text", "--executor", "celery", "--output-dir", str(tmp_path / "out")], cwd=REPO,
                             env={**stack.env, "EVASITE_CELERY_DURATION_CAP": "60"},
                             capture_output=True, text=True, timeout=120)
    assert capped.returncode == 1 and "may run 900s, more than EVASITE_CELERY_DURATION_CAP=60" in capped.stderr


def test_automatic_retry_is_the_same_under_either_executor(stack: CeleryStack) -> None:
    """An attempt discarded by the retry rule is moved aside and run again by the same delivery
    (one task), and the accepted attempt records the same retry count and reasons, and the run's
    log the same lines, as under the local executor."""
    flags = ["--scenarios", SCENARIOS[0], "--modality", "text", "--min-agent-turns", "50",
             "--auto-resume-on-insufficient-turns", "--max-auto-retries", "1", "--auto-retry-backoff-secs", "0"]
    local = stack.run_eval(*flags, "--executor", "local", log_name="retry_local.log")
    assert local.wait(timeout=240) == 0, (stack.root / "retry_local.log").read_text()[-3000:]
    workers = stack.workers().start(1)
    try:
        workers.wait_ready()
        celery = stack.run_eval(*flags, "--executor", "celery", log_name="retry_celery.log")
        assert celery.wait(timeout=240) == 0, (stack.root / "retry_celery.log").read_text()[-3000:]
    finally:
        workers.stop()
    local_dir, celery_dir = stack.session_dirs()[-2:]
    for session in (local_dir, celery_dir):
        assert [path.name.split(".killed.")[1][:10] for path in session.glob("*.killed.*")] == ["autoretry1"]
    local_metrics, celery_metrics = (json.loads((session / SCENARIOS[0] / "metrics.json").read_text())
                                     for session in (local_dir, celery_dir))
    assert celery_metrics["auto_retry_count"] == local_metrics["auto_retry_count"] == 1
    assert celery_metrics["auto_retry_reasons"] == local_metrics["auto_retry_reasons"]
    assert workers.log(0).count("received") == 1  # the one retry loop, inside the one delivery
    local_log, celery_log = ((session / "evaluation_log.txt").read_text() for session in (local_dir, celery_dir))
    for log in (local_log, celery_log):
        assert log.count(f"{SCENARIOS[0]}: attempt discarded (") == 1
        assert log.count(f"{SCENARIOS[0]}: finished ") == 1
