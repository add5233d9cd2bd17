"""The web app in a real Chromium against a live daphne: log in, start runs from the form, watch
them live, read a result's tool calls, compare runs, cancel a voice run mid-scenario and resume it.
Screenshots of the run, result and compare pages land in the test's tmp dir."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser import chromium, live_site, log_in  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow(seconds=50)  # whole runs driven through the browser

TEXT_SCENARIOS = ["eva_airline__1_1_3", "eva_airline__1_1_4", "eva_airline__1_1_5"]


def _start_run(page, site, scenarios: list[str], *, modality: str, duration: str = "") -> int:
    page.goto(f"{site.url}/runs/new/")
    page.check('input[name="scope"][value="pick"]')
    for name in scenarios:
        page.fill("#scenario-filter", name)
        page.check(f'input[name="scenarios"][value="{name}"]')
    page.select_option("#id_modality", modality)
    page.fill("#id_agent_model", "gold-replay")
    if duration:
        page.fill("#id_duration", duration)
    page.get_by_role("button", name="Start run").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


@pytest.fixture
def page(chromium, live_site):  # noqa: F811
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    log_in(page, live_site)
    yield page
    context.close()


def test_start_a_text_run_watch_it_read_a_result_and_compare(page, live_site, tmp_path: Path) -> None:  # noqa: F811
    assert page.get_by_role("button", name="Log out").is_visible()
    run_id = _start_run(page, live_site, TEXT_SCENARIOS, modality="text")
    page.evaluate("window.__sameDocument = true")
    page.wait_for_function("document.getElementById('progress-text').textContent.trim() === '3/3'", timeout=60_000)
    assert page.evaluate("window.__sameDocument === true")  # reached 3/3 without a reload
    page.reload()
    assert page.locator("#run-status").inner_text() == "finished"
    assert page.locator("#live-finished .chip.pass").count() == 3
    assert page.locator("#chart-groups svg rect.bar-pass").count() >= 1
    assert page.locator("#chart-latency").is_visible()
    page.screenshot(path=str(tmp_path / "run_page.png"), full_page=True)

    page.get_by_role("link", name="eva_airline__1_1_3").first.click()
    calls = page.locator(".timeline .tool-call")
    assert calls.count() >= 2
    assert "get_reservation" in calls.first.inner_text()
    assert page.locator(".timeline .tool-call .action").count() >= 1  # the recorded actions
    page.screenshot(path=str(tmp_path / "result_page.png"), full_page=True)

    live_site.manage("run_eval", "--scenarios", *TEXT_SCENARIOS[:2], "--modality", "text", "--agent-model", "null",
                     "--output-dir", str(live_site.output_dir))
    other = int(live_site.python("from scoring.models import Run; print(Run.objects.order_by('-pk').first().pk)"))
    page.goto(f"{live_site.url}/runs/compare/?a={run_id}&b={other}")
    rows = page.locator("#compare-rows tbody tr")
    assert rows.count() == 3
    first = rows.first.inner_text()
    assert "pass→fail" in first  # flips first: the null agent fails what gold replay passed
    assert "not in B" in rows.last.inner_text()
    page.screenshot(path=str(tmp_path / "compare_page.png"), full_page=True)
    for name in ("run_page.png", "result_page.png", "compare_page.png"):
        assert (tmp_path / name).stat().st_size > 10_000
    print(f"screenshots in {tmp_path}")


def test_cancel_a_voice_run_mid_scenario_and_resume_it(page, live_site, tmp_path: Path) -> None:  # noqa: F811
    run_id = _start_run(page, live_site, ["eva_airline__1_1_3"], modality="voice", duration="40")
    page.evaluate("window.__sameDocument = true")
    page.locator(".live-scenario .live-transcript li").first.wait_for(timeout=90_000)  # a live turn
    assert page.locator('.live-scenario button.listen[data-listen-url]').count() == 1
    assert page.evaluate("window.__sameDocument === true")
    page.screenshot(path=str(tmp_path / "run_page_live.png"), full_page=True)
    page.once("dialog", lambda dialog: dialog.accept())  # Cancel asks first
    page.get_by_role("button", name="Cancel").click()
    page.wait_for_url(f"{live_site.url}/runs/{run_id}/")
    assert page.locator("#run-status").inner_text() == "stopped"
    assert page.get_by_role("button", name="Resume").is_visible()

    page.get_by_role("button", name="Resume").click()
    page.wait_for_url(f"{live_site.url}/runs/{run_id}/")
    page.evaluate("window.__sameDocument = true")
    page.wait_for_function("document.getElementById('progress-text').textContent.trim() === '1/1'", timeout=120_000)
    assert page.evaluate("window.__sameDocument === true")
    page.reload()
    assert page.locator("#run-status").inner_text() == "finished"
    session = Path(live_site.python(f"from scoring.models import Run; print(Run.objects.get(pk={run_id}).session_dir)").strip())
    assert (session / "eva_airline__1_1_3" / "metrics.json").is_file()
    assert list(session.glob("eva_airline__1_1_3.killed.*"))  # the cancelled attempt, moved aside on resume
    assert "RESUMING" in (session / "evaluation_log.txt").read_text()
