"""Issue 14 item 11: with a permissive shell umask (022), the database (it holds session keys),
the secret key (also a pre-existing empty file) and a run's session directory and artifacts are
created owner-only. Real ``manage.py`` processes, started with that umask."""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from tests.browser import REPO
from tests import warm_python

pytestmark = pytest.mark.slow(seconds=17)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _manage(tmp_path: Path, *args: str) -> None:
    env = {**os.environ, "EVASITE_SQLITE_PATH": str(tmp_path / "db.sqlite3"),
           "EVASITE_SECRET_KEY_FILE": str(tmp_path / "secret_key"), "DATABASE_URL": "", "EVASITE_UMASK": ""}
    env.pop("DJANGO_SECRET_KEY", None)
    done = warm_python.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=600, umask=0o022)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_database_the_key_and_run_artifacts_are_owner_only(tmp_path: Path) -> None:
    key = tmp_path / "secret_key"
    key.touch(mode=0o644)
    key.chmod(0o644)
    _manage(tmp_path, "migrate", "--noinput", "-v", "0")
    assert key.stat().st_size > 0  # the key was written into the file that was there
    assert _mode(key) == 0o600
    database = [path for path in tmp_path.iterdir() if path.name.startswith("db.sqlite3")]
    assert database and {path.name: _mode(path) for path in database} == {path.name: 0o600 for path in database}

    _manage(tmp_path, "run_eval", "--modality", "text", "--scenarios", "eva_airline__1_1_3",
            "--agent-model", "gold-replay", "--output-dir", str(tmp_path / "out"))
    sessions = list((tmp_path / "out").glob("eval_*"))
    assert len(sessions) == 1
    written = [sessions[0], *sessions[0].rglob("*")]
    assert any(path.name == "metrics.json" for path in written)
    loose = {str(path.relative_to(tmp_path)): oct(_mode(path)) for path in written
             if _mode(path) & (stat.S_IRWXG | stat.S_IRWXO)}
    assert not loose, loose
    assert _mode(tmp_path / "out") & (stat.S_IRWXG | stat.S_IRWXO) == 0
