"""The scoring core stays plain Python: importing every module of ``scoring.core`` loads no Django
(and so no database, settings or app registry), which is what lets the bridge, workers and
commands reuse it and its tests run without a database."""
from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import scoring.core

REPO = Path(__file__).resolve().parents[2]


def test_core_modules_import_no_django() -> None:
    names = sorted(f"scoring.core.{info.name}" for info in pkgutil.iter_modules(scoring.core.__path__))
    assert "scoring.core.canonical" in names and len(names) >= 10
    probe = ("import importlib, sys\n"
             f"for name in {names!r}:\n"
             "    importlib.import_module(name)\n"
             "print(sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"scoring.core pulled in Django: {done.stdout}"
