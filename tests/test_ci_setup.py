"""CI and a hand run of ``.ci/run`` behave alike, and the set-up installs what the tests use."""
from __future__ import annotations

import re

from tests.browser import CHROMIUM, REPO


def test_ci_run_sets_ci_itself_before_running_the_readmes_test_command() -> None:
    lines = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    assert "export CI=true" in lines and ".venv/bin/python -m pytest" in lines
    assert lines.index("export CI=true") < lines.index(".venv/bin/python -m pytest")
    assert ".venv/bin/python -m pytest" in (REPO / "README.md").read_text()


def test_setup_checks_the_chromium_the_tests_drive() -> None:
    setup = (REPO / "scripts" / "setup.sh").read_text()
    checks = re.findall(r"^\s*(.+)\|\|\s*need_apt\+=\(chromium\)", setup, re.M)
    assert checks == [f"[ -x {CHROMIUM} ] "], checks


def test_the_suite_runs_on_workers_and_xdist_is_pinned() -> None:
    options = (REPO / "pytest.ini").read_text()
    assert re.search(r"^addopts = .*-n \d+ --dist loadgroup", options, re.M)
    assert re.search(r"^pytest-xdist==\d", (REPO / "requirements.txt").read_text(), re.M)
