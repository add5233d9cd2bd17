"""Fresh SQLite databases for tests, copied from templates built once per suite run.

A ``manage.py migrate`` is a Django process costing about 5 CPU seconds on the 2-core machine, and
the suite wants dozens of fresh databases (CLI runs, live sites); a copy of a migrated file is a
millisecond and the same schema, since the templates are built by this checkout's migrations
at the start of every session. ``scripts/test.sh`` names a folder in ``EVASITE_TEST_TEMPLATES``
that all its test processes share (the first to need a template builds it under a lock; eight
processes each building two was 50 CPU seconds); without it each test process builds its own.
Tests that test ``migrate`` itself (file modes, PostgreSQL) still run it."""
from __future__ import annotations

import atexit
import fcntl
import hashlib
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

from tests import warm_python

REPO = Path(__file__).resolve().parent.parent

_PRELUDE = ("import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'tests.settings'); django.setup()\n"
            "from django.core.management import call_command\n"
            "call_command('migrate', interactive=False, verbosity=0)\n")
_SITE = ("call_command('load_scenarios')\n"
         "from django.contrib.auth import get_user_model\n"
         "get_user_model().objects.create_user({username!r}, password={password!r})\n")
_CLOSE = "from django.db import connections; connections.close_all()\n"  # the last close checkpoints the WAL

_templates: dict[tuple[str, ...], Path] = {}


def _template(kind: str, *user: str) -> Path:
    key = (kind, *user)
    if key not in _templates:
        shared = os.environ.get("EVASITE_TEST_TEMPLATES")
        if shared:
            _templates[key] = _shared_template(Path(shared), kind, *user)
        else:
            directory = Path(tempfile.mkdtemp(prefix=f"evasite-{kind}-template-"))
            atexit.register(shutil.rmtree, directory, True)
            _templates[key] = _build(directory / "db.sqlite3", kind, *user)
    return _templates[key]


def _shared_template(folder: Path, kind: str, *user: str) -> Path:
    """The suite's template for ``kind``: built by the first process that asks, under a lock the
    others wait on, and published by a rename only once complete."""
    name = hashlib.sha256("\0".join((kind, *user)).encode()).hexdigest()[:16]
    path = folder / f"{kind}-{name}.sqlite3"
    with open(folder / f"{kind}-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            building = folder / f"{kind}-{name}.building" / "db.sqlite3"
            shutil.rmtree(building.parent, ignore_errors=True)  # left by a process that died building
            building.parent.mkdir()
            _build(building, kind, *user)
            for suffix in ("-wal", ""):  # the main file last: its name says the template is whole
                source = building.with_name(building.name + suffix)
                if source.exists():
                    source.rename(path.with_name(path.name + suffix))
            shutil.rmtree(building.parent, ignore_errors=True)
    return path


def _build(path: Path, kind: str, *user: str) -> Path:
    env = {**os.environ, "EVASITE_SQLITE_PATH": str(path),
           "EVASITE_SECRET_KEY_FILE": str(path.parent / "secret_key.txt")}
    env.pop("DATABASE_URL", None)
    code = _PRELUDE + (_SITE.format(username=user[0], password=user[1]) if user else "") + _CLOSE
    done = warm_python.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"building the {kind} database template failed:\n{done.stderr[-3000:]}")
    return path


def prebuild() -> None:
    """Build the suite's shared templates before its test processes start (``scripts/test.sh``),
    so that none of them waits on another's build under a loaded machine's lock."""
    from tests.browser import PASSWORD, USERNAME

    builds = [threading.Thread(target=_template, args=args) for args in (("schema",), ("site", USERNAME, PASSWORD))]
    for build in builds:
        build.start()
    for build in builds:
        build.join()
    assert len(_templates) == 2, "a template build failed (see above)"


def _copy(template: Path, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal"):
        source = template.with_name(template.name + suffix)
        if source.exists():
            shutil.copyfile(source, path.with_name(path.name + suffix))
            os.chmod(path.with_name(path.name + suffix), 0o600)
    return path


def migrated_sqlite(path: Path) -> Path:
    """A new database at ``path`` with every migration applied and nothing else."""
    return _copy(_template("schema"), path)


def site_sqlite(path: Path, username: str, password: str) -> Path:
    """A new database at ``path`` as a live site needs it: migrated, the scenario catalogue
    mirrored from this environment's data root, and one user."""
    return _copy(_template("site", username, password), path)
