"""CI and a hand run of ``.ci/run`` behave alike, and the set-up installs what the tests use."""
from __future__ import annotations

import re

from tests.browser import CHROMIUM, REPO


def test_ci_run_sets_ci_itself_before_running_the_readmes_test_command() -> None:
    lines = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    readme = (REPO / "README.md").read_text()
    documented = re.search(r"Run the tests[^\n]*\n\n```bash\n(.+?)\n```", readme).group(1)
    assert documented == "bash scripts/test.sh" and lines[-1] == documented
    assert lines.index("export CI=true") < lines.index(documented)


def test_the_test_script_runs_the_quiet_tests_first_on_the_cpus_beside_the_rest() -> None:
    script = (REPO / "scripts" / "test.sh").read_text()
    commands = [line.strip() for line in script.splitlines() if "-m pytest" in line]
    assert len(commands) == 2, commands
    quiet, rest = commands
    assert quiet.startswith('.venv/bin/python -m pytest -m quiet -n 0 "$@"') and quiet.endswith("&")
    assert rest.startswith('nice -n 19 .venv/bin/python -m pytest -m "not quiet" "$@"')
    assert script.index('wait "$quiet_pid"') > script.index(rest)
    marked = [path for path in (REPO / "tests").rglob("test_*.py")
              if path.name != "test_ci_setup.py" and "@pytest.mark.quiet" in path.read_text()]
    assert len(marked) == 4, marked


def test_setup_checks_the_chromium_the_tests_drive() -> None:
    setup = (REPO / "scripts" / "setup.sh").read_text()
    checks = re.findall(r"^\s*(.+)\|\|\s*need_apt\+=\(chromium\)", setup, re.M)
    assert checks == [f"[ -x {CHROMIUM} ] "], checks


def test_the_suite_runs_on_workers_and_xdist_is_pinned() -> None:
    options = (REPO / "pytest.ini").read_text()
    assert re.search(r"^addopts = .*-n \d+ --dist loadgroup", options, re.M)
    assert re.search(r"^pytest-xdist==\d", (REPO / "requirements.txt").read_text(), re.M)
