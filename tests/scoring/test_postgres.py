"""DATABASE_URL switches storage to PostgreSQL: migrations apply and a run's rows agree with its
files there too. Runs against a throw-away local cluster (initdb + pg_ctl on a free loopback
port) when the PostgreSQL server binaries are installed (scripts/setup.sh installs them)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.services import REPO, database_url  # noqa: F401 (fixture)
from tests import warm_python

CHECK = """
import json, os, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evasite.settings")
django.setup()
from django.db import connection
from scoring.models import Run, ScenarioResult
from scoring.core.canonical import db_hash
run = Run.objects.get()
rows = list(ScenarioResult.objects.filter(run=run).order_by("position"))
agree = all(json.load(open(os.path.join(r.directory, "metrics.json"))) == r.metrics for r in rows)
hashes = all(db_hash(r.final_db) == r.metrics["db_state_actual_hash"] for r in rows)
print(connection.vendor, run.status, len(rows), agree, hashes)
"""


@pytest.mark.slow(seconds=25)
def test_run_eval_on_postgresql(tmp_path: Path, database_url: str) -> None:
    env = {**os.environ, "DATABASE_URL": database_url}
    manage = [sys.executable, "manage.py"]
    warm_python.run([*manage, "migrate", "-v", "0"], cwd=REPO, env=env, check=True, timeout=180)
    run = warm_python.run([*manage, "run_eval", "--scenarios", "eva_airline__voluntary_date_change",
                          "eva_airline__2_1_2", "--modality", "text", "--output-dir", str(tmp_path)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    check = warm_python.run([sys.executable, "-c", CHECK], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert check.stdout.split() == ["postgresql", "finished", "2", "True", "True"], check.stderr
