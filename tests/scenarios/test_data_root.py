"""``EVAL_DATA_ROOT`` resolution in a fresh process and the system checks (scenarios.md §2, §14)."""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from scenarios import data_root
from scenarios.checks import check_data_root, check_registry
from tests import warm_python

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = data_root.DEFAULT_DATA_ROOT
MARKER_DATE = "2099-01-02"

# Runs in a fresh interpreter: the dataset index and agent config are cached per process.
PROBE = """
import json, django
django.setup()
from scenarios import data_root, registry
names = registry.list_eval_scenarios()
out = {"root": str(data_root.get_eval_data_root()), "count": len(names), "dates": {}}
for name in names:
    s = registry.get_eval_scenario(name)
    s.expected_scenario_db; s.policy; s.get_agent_prompt(); s.get_user_prompt()
    out["dates"][s.eva_id] = s.current_date
print(json.dumps(out))
"""


def copy_fixtures(target: Path) -> Path:
    """A temp copy of the fixture directory whose 1.1.2 database carries a marker date."""
    shutil.copytree(FIXTURES, target)
    db_path = target / "1.1.2.json"
    db = json.loads(db_path.read_text())
    db["_current_date"] = MARKER_DATE
    db_path.write_text(json.dumps(db))
    return target


def run_probe(env_root: Path) -> dict:
    env = {**os.environ, "EVAL_DATA_ROOT": str(env_root), "DJANGO_SETTINGS_MODULE": "evasite.settings"}
    result = warm_python.run(
        [sys.executable, "-c", PROBE], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_default_root_is_beside_the_repository(monkeypatch):
    monkeypatch.delenv("EVAL_DATA_ROOT", raising=False)
    assert data_root.get_eval_data_root() == (REPO_ROOT.parent / "shared" / "eva_airline").resolve()


@pytest.mark.parametrize("layout", ["fixture_dir", "parent_dir"])
def test_env_root_in_fresh_process(tmp_path, layout):
    fixture_dir = copy_fixtures(tmp_path / "eva_airline")
    out = run_probe(fixture_dir if layout == "fixture_dir" else tmp_path)
    assert out["root"] == str(fixture_dir.resolve())
    assert out["count"] == 50
    assert out["dates"]["1.1.2"] == MARKER_DATE  # read from the copy, not the shared fixtures
    assert out["dates"]["2.1.1"] == "2026-04-14"


def test_missing_root_does_not_break_start_up(tmp_path):
    code = (
        "import django; django.setup(); from scenarios import registry; "
        "print(len(registry.list_eval_scenarios()))"
    )
    env = {**os.environ, "EVAL_DATA_ROOT": str(tmp_path / "nowhere"), "DJANGO_SETTINGS_MODULE": "evasite.settings"}
    result = warm_python.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "5"  # the seeds need no data to register; scaffolds are skipped


def test_check_passes_on_shared_fixtures(monkeypatch):
    monkeypatch.delenv("EVAL_DATA_ROOT", raising=False)
    assert check_data_root() == []
    assert check_registry() == []


def test_check_reports_missing_and_empty_root(monkeypatch, tmp_path):
    missing = tmp_path / "missing"
    monkeypatch.setenv("EVAL_DATA_ROOT", str(missing))
    errors = check_data_root()
    assert [error.id for error in errors] == ["scenarios.E001"]
    assert str(missing) in errors[0].msg and "EVAL_DATA_ROOT" in errors[0].hint

    monkeypatch.setenv("EVAL_DATA_ROOT", str(tmp_path))
    errors = check_data_root()
    assert {error.id for error in errors} == {"scenarios.E001"}
    assert len(errors) == 2 and all(str(tmp_path) in error.msg for error in errors)


def test_run_eval_runs_the_project_checks_before_anything(tmp_path):
    """run_eval skips Django's URL checks (they import every view) but not the project's: a
    missing fixture directory stops it with the check's own message."""
    from tests.manage_cli import manage

    env = {**os.environ, "EVAL_DATA_ROOT": str(tmp_path / "missing"), "EVASITE_SQLITE_PATH": str(tmp_path / "db")}
    done = manage("run_eval", "--modality", "text", "--scenarios", "eva_airline__1_1_3", "--output-dir",
                  str(tmp_path), env=env)
    assert done.returncode == 1 and "scenarios.E001" in done.stderr, done.stderr[-2000:]
    assert not list(tmp_path.glob("eval_*"))


def test_check_reports_missing_scenario_file(monkeypatch, tmp_path):
    root = copy_fixtures(tmp_path / "eva_airline")
    (root / "4.1.3.json").unlink()
    monkeypatch.setenv("EVAL_DATA_ROOT", str(root))
    errors = check_data_root()
    assert [error.id for error in errors] == ["scenarios.E001"] and "4.1.3" in errors[0].msg


def test_check_reports_wrong_yaml_hash(monkeypatch, tmp_path):
    root = copy_fixtures(tmp_path / "eva_airline")
    with (root / "airline_agent.yaml").open("a") as handle:
        handle.write("\n# edited\n")
    monkeypatch.setenv("EVAL_DATA_ROOT", str(tmp_path))  # parent layout resolves to the copy
    errors = check_data_root()
    assert [error.id for error in errors] == ["scenarios.E002"]
    assert str(root.resolve() / "airline_agent.yaml") in errors[0].msg


def test_check_reports_too_few_scenarios(monkeypatch):
    from scenarios import registry

    monkeypatch.setattr(registry, "list_eval_scenarios", lambda: ["eva_airline__voluntary_date_change"])
    errors = check_registry()
    assert [error.id for error in errors] == ["scenarios.E003"] and "only 1 scenarios" in errors[0].msg


def test_checks_are_registered():
    from django.core import checks

    registered = checks.registry.registry.get_checks()
    assert check_data_root in registered and check_registry in registered
