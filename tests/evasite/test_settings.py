"""Settings read the environment once: SQLite (WAL) and the in-memory layer by default,
PostgreSQL and Redis when DATABASE_URL / REDIS_URL are set."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env={**clean, **env},
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
    assert values["hosts"] == ["redis://127.0.0.1:6390/0"]
