"""The release gate in the site, in Chromium against a live daphne and real text runs of the
built-in models (gold replay passes all of these scenarios, the null agent none): "Use as
baseline" marks a run and the New-run form preselects it, a null-agent run started against the
gold baseline shows its regression on its page as it finishes, and the compare page shows the
gate's statistics and flags a flaky scenario (one trial of a real three-trial run recorded as
failed through the runner's own row function)."""
from __future__ import annotations

import re

import pytest

from tests.browser import USERNAME, chromium, live_site, log_in  # noqa: F401 (fixtures)
from tests.pages.ui_browser import shots

pytestmark = pytest.mark.slow(seconds=21)  # gated runs started and read in the browser

FIVE = ["eva_airline__voluntary_date_change", "eva_airline__1_1_3", "eva_airline__2_1_2",
        "eva_airline__3_1_5", "eva_airline__4_2_5"]
THREE = FIVE[1:4]
RUN_SECONDS = 240


def _start(page, site, scenarios: list[str], *, agent: str, baseline: str, trials: int = 1) -> int:
    """Start a text run from the New-run form; ``baseline`` is the Gate field's value ("" for none)."""
    page.goto(f"{site.url}/runs/new/")
    page.check('input[name="scope"][value="pick"]')
    for name in scenarios:
        page.fill("#scenario-filter", name)
        page.check(f'input[name="scenarios"][value="{name}"]')
    page.select_option("#id_modality", "text")
    page.fill("#id_agent_model", agent)
    page.fill("#id_trials", str(trials))
    page.fill("#id_concurrency", "3")
    page.select_option("#id_baseline", baseline)
    page.get_by_role("button", name="Start run").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


def _wait_finished(page) -> None:
    page.wait_for_function("document.getElementById('run-status').dataset.status === 'finished'",
                           timeout=RUN_SECONDS * 1000)


def _cells(row) -> list[str]:
    return [cell.strip() for cell in row.locator("th, td").all_inner_texts()]


@pytest.fixture
def page(chromium, live_site):  # noqa: F811
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    log_in(page, live_site)
    yield page
    context.close()


@pytest.fixture(scope="module")
def gold_five(chromium, live_site) -> int:  # noqa: F811
    """A finished gold-replay run of FIVE, started from the form without a baseline."""
    context = chromium.new_context()
    page = context.new_page()
    try:
        log_in(page, live_site)
        run_id = _start(page, live_site, FIVE, agent="gold-replay", baseline="")
        _wait_finished(page)
        return run_id
    finally:
        context.close()


def test_use_as_baseline_marks_the_run_and_the_new_run_form_preselects_it(page, live_site, gold_five) -> None:  # noqa: F811
    page.goto(f"{live_site.url}/runs/{gold_five}/")
    assert page.locator("#baseline-line").count() == 0
    assert page.locator("#run-gate").inner_text().strip() == ""  # no baseline chosen: no gate section
    page.get_by_role("button", name="Use as baseline").click()
    page.wait_for_url(f"{live_site.url}/runs/{gold_five}/")
    assert "is now the site's baseline" in page.locator("ul.messages li.success").inner_text()
    line = page.locator("#baseline-line")
    assert "Site baseline" in line.inner_text() and f"chosen by {USERNAME}" in line.inner_text()
    assert page.get_by_role("button", name="Use as baseline").count() == 0

    page.goto(f"{live_site.url}/runs/new/")
    assert page.locator("fieldset legend", has_text="Gate (optional)").is_visible()
    field = page.locator("#id_baseline")
    assert field.input_value() == str(gold_five)
    assert "the site's baseline" in field.locator("option:checked").inner_text()
    assert field.locator('option[value=""]').inner_text().startswith("None")
    assert page.locator("#id_junit_xml, #id_summary_md").count() == 0
    shots(page, "gate-new-run-form")


def test_a_null_agent_run_against_the_gold_baseline_shows_a_regression(page, live_site, gold_five) -> None:  # noqa: F811
    run_id = _start(page, live_site, FIVE, agent="null", baseline=str(gold_five))
    page.evaluate("window.__sameDocument = true")
    verdict = page.locator("#run-gate .gate-verdict")
    verdict.wait_for(timeout=RUN_SECONDS * 1000)  # arrives with the run's end, without a reload
    assert page.evaluate("window.__sameDocument === true")
    assert verdict.get_attribute("data-regression") == "true"
    assert verdict.locator(".badge").inner_text() == "Regression"
    gold_label = page.locator("#run-gate .gate-verdict code").inner_text()
    assert gold_label.startswith("eval_")
    reasons = page.locator("#run-gate .gate-reasons li").all_inner_texts()
    assert any("paired sign-flip test p = 0.0312 < α = 0.05" in reason for reason in reasons)
    assert any(reason.startswith("5 scenario(s) passed every baseline trial and fail every trial now") for reason in reasons)
    rules = page.locator("#run-gate table.gate-rules tbody tr")  # p as the reasons print it (0.03125)
    assert [_cells(rules.nth(i))[2:] for i in range(3)] == [["0.0312", "yes"], ["1.0000", "no"], ["—", "yes"]]
    figures = page.locator("#run-gate .gate-figures").inner_text()
    assert "100.00% (5/5) → 0.00% (0/5)" in figures
    assert re.search(r"−100\.00 points, 95% interval \[−\d+\.\d\d, −\d+\.\d\d\]", figures)
    flips = page.locator("#run-gate table.gate-flips tbody tr")
    assert flips.count() == 5
    assert {_cells(flips.nth(i))[0] for i in range(5)} == set(FIVE)
    assert all(_cells(flips.nth(i))[1:3] == ["1/1", "0/1"] and _cells(flips.nth(i))[-1] == "broke" for i in range(5))
    baseline_link = page.get_by_role("link", name=re.compile(r"^Baseline: "))
    assert baseline_link.get_attribute("href") == f"/runs/{gold_five}/"
    shots(page, "gate-run-regression")

    page.get_by_role("link", name="Compare with the baseline").click()
    page.wait_for_url(re.compile(rf"/runs/compare/\?a={gold_five}&b={run_id}$"))
    assert page.locator("#compare-gate .gate-verdict").get_attribute("data-regression") == "true"
    assert page.locator("#compare-gate .gate-reasons li").all_inner_texts() == reasons  # the same verdict


def test_compare_shows_the_gate_statistics_and_flags_a_flaky_scenario(page, live_site) -> None:  # noqa: F811
    flaky_name = THREE[0]
    gold = _start(page, live_site, THREE, agent="gold-replay", baseline="", trials=3)
    _wait_finished(page)
    live_site.python(f"from tests.pages.gate_seed import fail_attempt\nfail_attempt({gold}, {flaky_name!r}, 2)")
    page.reload()
    assert page.locator("#run-gate h2", has_text="Flaky scenarios").is_visible()
    flaky_rows = page.locator("#run-gate table.flaky-list tbody tr")
    assert flaky_rows.count() == 1 and _cells(flaky_rows.first) == [f"{flaky_name} flaky", "2/3"]

    null = _start(page, live_site, THREE, agent="null", baseline=str(gold), trials=3)
    page.locator("#run-gate .gate-verdict").wait_for(timeout=RUN_SECONDS * 1000)
    assert page.locator("#run-gate .gate-verdict").get_attribute("data-regression") == "true"

    page.goto(f"{live_site.url}/runs/compare/?a={gold}&b={null}")
    gate = page.locator("#compare-gate")
    assert gate.locator(".gate-verdict").get_attribute("data-regression") == "true"
    assert "88.89% (8/9) → 0.00% (0/9)" in gate.inner_text()  # the fabricated failure counts
    rules = gate.locator("table.gate-rules tbody tr")
    # Sign-flip over −2/3, −1, −1: only the all-negative assignment is as low (1/8). Fisher: 3/3 → 0/3
    # is 1/20 and 2/3 → 0/3 is 4/20; after Holm over three scenarios 0.15, 0.15 and 0.2.
    assert [_cells(rules.nth(i))[2:] for i in range(3)] == [["0.1250", "no"], ["0.1500", "no"], ["—", "yes"]]
    flips = gate.locator("table.gate-flips tbody tr")
    assert [_cells(flips.nth(i)) for i in range(3)] == [
        [THREE[1], "3/3", "0/3", "0.0500", "0.1500", "broke"],
        [THREE[2], "3/3", "0/3", "0.0500", "0.1500", "broke"],
        [flaky_name, "2/3", "0/3", "0.2000", "0.2000", "fewer passes"]]

    flaky_a = page.locator("#flaky-a table.flaky-list tbody tr")
    assert flaky_a.count() == 1 and _cells(flaky_a.first) == [f"{flaky_name} flaky", "2/3"]
    assert "None: every scenario gave the same verdict on every trial." in page.locator("#flaky-b").inner_text()
    flagged = page.locator("#compare-rows tbody tr", has=page.locator(".badge.flaky", has_text="flaky in A"))
    assert flagged.count() == 3  # the flaky scenario's three trials
    assert all(_cells(flagged.nth(i))[0].startswith(flaky_name) for i in range(3))
    shots(page, "gate-compare", height=1200)
