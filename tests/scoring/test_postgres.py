"""DATABASE_URL switches storage to PostgreSQL: migrations apply and a run's rows agree with its
files there too. Runs against a throw-away local cluster (initdb + pg_ctl on a free loopback
port) when the PostgreSQL server binaries are installed (scripts/setup.sh installs them)."""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _pg_bin() -> Path | None:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(candidates[-1]).parent if candidates else None


def _as_postgres(args: list[str]) -> list[str]:
    # initdb and postgres refuse to run as root; Debian's package creates the postgres user.
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@pytest.fixture
def database_url() -> Iterator[str]:
    bin_dir = _pg_bin()
    if bin_dir is None or (os.geteuid() == 0 and not shutil.which("runuser")):
        pytest.skip("PostgreSQL server binaries are not installed (scripts/setup.sh installs them)")
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("no postgres system user to run the server as")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = Path(tempfile.mkdtemp(prefix="evasite-pg-"))
    if os.geteuid() == 0:
        os.chown(base, owner.pw_uid, owner.pw_gid)
    data = base / "data"
    subprocess.run(_as_postgres([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "evasite"]),
                   check=True, capture_output=True, timeout=120)
    server = _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(base / "server.log"), "-w",
                           "-o", f"-p {port} -k {base} -c listen_addresses=127.0.0.1"])
    subprocess.run([*server, "start"], check=True, capture_output=True, timeout=120)
    try:
        subprocess.run(_as_postgres([str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "evasite",
                                     "evasite"]), check=True, capture_output=True, timeout=60)
        yield f"postgres://evasite@127.0.0.1:{port}/evasite"
    finally:
        subprocess.run([*server, "stop", "-m", "fast"], capture_output=True, timeout=60)
        shutil.rmtree(base, ignore_errors=True)


CHECK = """
import json, os, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evasite.settings")
django.setup()
from django.db import connection
from scoring.models import Run, ScenarioResult
from scoring.canonical import db_hash
run = Run.objects.get()
rows = list(ScenarioResult.objects.filter(run=run).order_by("position"))
agree = all(json.load(open(os.path.join(r.directory, "metrics.json"))) == r.metrics for r in rows)
hashes = all(db_hash(r.final_db) == r.metrics["db_state_actual_hash"] for r in rows)
print(connection.vendor, run.status, len(rows), agree, hashes)
"""


def test_run_eval_on_postgresql(tmp_path: Path, database_url: str) -> None:
    env = {**os.environ, "DATABASE_URL": database_url}
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v", "0"], cwd=REPO, env=env, check=True, timeout=180)
    run = subprocess.run([*manage, "run_eval", "--scenarios", "eva_airline__voluntary_date_change",
                          "eva_airline__2_1_2", "--modality", "text", "--output-dir", str(tmp_path)],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    check = subprocess.run([sys.executable, "-c", CHECK], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert check.stdout.split() == ["postgresql", "finished", "2", "True", "True"], check.stderr
