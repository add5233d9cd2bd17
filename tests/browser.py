"""Real parts for end-to-end tests: a daphne server process on a free loopback port with its own
SQLite database and output directory, and Debian's Chromium driven by Playwright.

Use as fixtures (``from tests.browser import live_site, chromium  # noqa: F401``) or directly.
In CI (``CI=true``) a missing Chromium fails instead of skipping.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests import warm_python
from tests.sqlite_template import site_sqlite

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
USERNAME = "tester"
PASSWORD = "correct-horse-battery-staple"

# The flags a root, offline, headless Chromium needs here (stack-notes §4), plus fake media so
# getUserMedia works without a device or a permission prompt.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
    "--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns",
    "--autoplay-policy=no-user-gesture-required",
]

_LISTENING = re.compile(r"Listening on TCP address 127\.0\.0\.1:(\d+)")


def require(condition: bool, reason: str) -> None:
    """Skip a test whose real part is missing, except in CI where that is a failure."""
    if condition:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: a missing service is a failure)")
    pytest.skip(reason)


@dataclass
class LiveSite:
    """One daphne process serving ``evasite.asgi`` against a throw-away database."""

    root: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    process: subprocess.Popen | None = None

    @property
    def db_path(self) -> Path:
        return self.root / "site.sqlite3"

    @property
    def output_dir(self) -> Path:
        return self.root / "eval_results"

    @property
    def log_path(self) -> Path:
        return self.root / "daphne.log"

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "EVASITE_SQLITE_PATH": str(self.db_path),
            "EVASITE_OUTPUT_DIR": str(self.output_dir),
            "EVASITE_SECRET_KEY_FILE": str(self.root / "secret_key.txt"),
            "EVASITE_PIPECAT_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            **self.extra_env,
        }

    def manage(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        """``manage.py`` against the site's database (check=True)."""
        return warm_python.run([sys.executable, "manage.py", *args], cwd=REPO, env=self.env, check=True,
                               capture_output=True, text=True, timeout=timeout)

    def python(self, code: str, timeout: float = 120) -> str:
        """Run Django code against the site's database; returns its stdout."""
        prelude = "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'evasite.settings'); django.setup()\n"
        done = warm_python.run([sys.executable, "-c", prelude + code], cwd=REPO, env=self.env, check=True,
                               capture_output=True, text=True, timeout=timeout)
        return done.stdout

    def prepare(self) -> None:
        """Schema, scenario mirror and the test user: a copy of this test process's template
        database (building one costs a Django process of seconds)."""
        own = {"EVAL_DATA_ROOT", "DATABASE_URL", "EVASITE_SQLITE_PATH"} & set(self.extra_env)
        assert not own, f"the template database has this environment's data root and a SQLite file, not {own}"
        self.root.mkdir(parents=True, exist_ok=True)
        site_sqlite(self.db_path, USERNAME, PASSWORD)

    def start(self, timeout: float = 60) -> str:
        log = open(self.log_path, "a")
        earlier = log.tell()  # a restart appends: only this start's lines name its port
        self.process = warm_python.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", "0", "evasite.asgi:application"],
            cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as lines:
                lines.seek(earlier)
                match = _LISTENING.findall(lines.read().decode(errors="replace"))
            if match:
                self.url = f"http://127.0.0.1:{match[-1]}"
                return self.url
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"daphne did not start:\n{self.log_path.read_text(errors='replace')[-4000:]}")

    def stop(self, *, kill: bool = False, grace: float = 10) -> None:
        """SIGTERM (or SIGKILL) the server's process group, escalating after ``grace`` seconds."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGKILL if kill else signal.SIGTERM)
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def restart(self) -> str:
        self.stop()
        return self.start()


def start_site(root: Path, **extra_env: str) -> LiveSite:
    site = LiveSite(root, dict(extra_env))
    site.prepare()
    site.start()
    return site


@pytest.fixture(scope="module")
def live_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveSite]:
    site = start_site(tmp_path_factory.mktemp("site"))
    try:
        yield site
    finally:
        site.stop()


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """A headless Debian Chromium (Playwright's own browser downloads never work here)."""
    require(Path(CHROMIUM).exists(), "Debian's chromium is not installed (scripts/setup.sh installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def log_in(page: Any, site: LiveSite, username: str = USERNAME, password: str = PASSWORD) -> None:
    """Log in through the site's login form (Django's AuthenticationForm field ids)."""
    page.goto(f"{site.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state()
