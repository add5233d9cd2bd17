"""Settings read the environment once: SQLite (WAL) and the in-memory layer by default,
PostgreSQL and Redis when DATABASE_URL / REDIS_URL are set."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evasite.env import secret_key_from_file
from tests import warm_python

REPO = Path(__file__).resolve().parents[2]
PROBE = (
    "import json, django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'evasite.settings'); django.setup();"
    "from django.conf import settings as s;"
    "print(json.dumps({'engine': s.DATABASES['default']['ENGINE'], 'name': str(s.DATABASES['default']['NAME']),"
    "'options': s.DATABASES['default'].get('OPTIONS', {}), 'layer': s.CHANNEL_LAYERS['default']['BACKEND'],"
    "'hosts': s.CHANNEL_LAYERS['default'].get('CONFIG', {}).get('hosts')}))"
)


def _settings(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    proc = warm_python.run([sys.executable, "-c", PROBE], cwd=REPO, env={**clean, **env},
                           capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_defaults_are_sqlite_wal_and_in_memory_layer() -> None:
    values = _settings()
    assert values["engine"] == "django.db.backends.sqlite3"
    assert values["options"]["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in values["options"]["init_command"]
    assert values["layer"] == "channels.layers.InMemoryChannelLayer"


def test_database_url_and_redis_url_switch_engines() -> None:
    values = _settings(DATABASE_URL="postgres://eva:pw@127.0.0.1:5433/evasite", REDIS_URL="redis://127.0.0.1:6390/0")
    assert values["engine"] == "django.db.backends.postgresql"
    assert values["name"] == "evasite"
    assert values["layer"] == "channels_redis.core.RedisChannelLayer"
    assert values["hosts"] == [{"address": "redis://127.0.0.1:6390/0", "socket_timeout": 30}]


SECURITY_PROBE = (
    "import json, django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'evasite.settings'); django.setup();"
    "from django.conf import settings as s;"
    "print(json.dumps({'debug': s.DEBUG, 'key': s.SECRET_KEY, 'middleware': s.MIDDLEWARE}))"
)


def _security(tmp_path: Path, **env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SECRET_KEY", "EVASITE_DEBUG")}
    env.setdefault("EVASITE_SECRET_KEY_FILE", str(tmp_path / "secret_key"))
    proc = warm_python.run([sys.executable, "-c", SECURITY_PROBE], cwd=REPO, env={**clean, **env},
                           capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_debug_is_off_unless_asked_for(tmp_path: Path) -> None:
    assert _security(tmp_path)["debug"] is False
    assert _security(tmp_path, EVASITE_DEBUG="1")["debug"] is True


def test_secret_key_comes_from_the_environment_else_one_generated_file(tmp_path: Path) -> None:
    first = _security(tmp_path)["key"]
    key_file = tmp_path / "secret_key"
    assert key_file.read_text().strip() == first and len(first) >= 50
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    assert _security(tmp_path)["key"] == first  # generated once, then reused
    assert _security(tmp_path, DJANGO_SECRET_KEY="from-the-environment")["key"] == "from-the-environment"


def test_processes_starting_together_on_a_fresh_install_share_one_key(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # scripts/serve.sh starts its workers at once: each one keeping the key it generated would
    # sign sessions the others cannot read (a logged-in user logged out on every other request).
    # Here a sibling process writes its key while this one is generating its own.
    key_file = tmp_path / "secret_key"

    def sibling_first() -> str:
        key_file.write_text("the-sibling-was-first\n")
        return "this-process-key"

    monkeypatch.setattr("django.core.management.utils.get_random_secret_key", sibling_first)
    assert secret_key_from_file(str(key_file)) == "the-sibling-was-first"
    assert key_file.read_text().strip() == "the-sibling-was-first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret_key"]  # no draft left behind


def test_every_request_passes_the_login_and_static_middleware(tmp_path: Path) -> None:
    middleware = _security(tmp_path)["middleware"]
    assert "scoring.web.access.LoginRequiredMiddleware" in middleware
    assert middleware.index("evasite.static_serving.StaticFilesMiddleware") < middleware.index(
        "django.contrib.sessions.middleware.SessionMiddleware")


def _check_deploy(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SECRET_KEY", "EVASITE_DEBUG", "EVASITE_HTTPS")}
    return warm_python.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], cwd=REPO,
                           env={**clean, "EVASITE_SECRET_KEY_FILE": str(tmp_path / "secret_key"), **env},
                           capture_output=True, text=True, timeout=120)


def test_check_deploy_is_clean_with_the_documented_production_variables(tmp_path: Path) -> None:
    production = {"DJANGO_ALLOWED_HOSTS": "evals.example.org", "EVASITE_HTTPS": "1",
                  "DJANGO_CSRF_TRUSTED_ORIGINS": "https://evals.example.org"}
    done = _check_deploy(tmp_path, **production)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNINGS" not in done.stdout + done.stderr and "ERRORS" not in done.stdout + done.stderr
    plain = _check_deploy(tmp_path)  # no TLS settings: the deploy checks say so
    assert plain.returncode != 0 and "SECURE_SSL_REDIRECT" in plain.stdout + plain.stderr
