"""Reviewing in the site, in Chromium: the review form beside the evidence and the keyboard through
a run's results, tool results and misheard entities on the result page, compare deltas with their
intervals, run names/tags/notes with the list's filters, pages and tick-to-compare, the grouped
searchable catalogue and a scenario's page, and the things every page has (skip link, current
nav item, local times, no sideways scroll on a phone)."""
from __future__ import annotations

import re

import pytest

from scoring.core.stats import rate_difference
from tests.browser import chromium, live_site, log_in  # noqa: F401 (fixtures)
from tests.pages.ui_browser import seed, shots

pytestmark = pytest.mark.slow(seconds=17)


@pytest.fixture
def page(chromium, live_site):  # noqa: F811
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.on("dialog", lambda dialog: pytest.fail(f"unexpected dialog: {dialog.message}"))
    log_in(page, live_site)
    yield page
    context.close()


def _root(site) -> str:
    return str(site.output_dir)


def test_review_in_the_site_and_walk_the_results_by_keyboard(page, live_site) -> None:  # noqa: F811
    from playwright.sync_api import expect

    run_id = seed(live_site, f"make_run({_root(live_site)!r}, '20260301_000000', owner='tester',"
                             " verdicts=[True, False, True, None, False], latency_ms=700.0, tokens=200)")
    ids = seed(live_site, f"list(ScenarioResult.objects.filter(run_id={run_id}).order_by('position')"
                          ".values_list('pk', flat=True))")
    page.goto(f"{live_site.url}/results/{ids[0]}/")
    expect(page.locator("#result-nav")).to_contain_text("1 of 5")
    expect(page.locator("#review-state")).to_have_text("Not reviewed yet.")
    page.get_by_label("disagrees with the automatic verdict").check()
    page.get_by_label("Note").fill("The agent never read the new flight back. <b>bold?</b>")
    page.get_by_role("button", name="Save and next needing review").click()
    # The queue: unreviewed failures first (positions 1 and 4), then N/A, then passes.
    page.wait_for_url(f"{live_site.url}/results/{ids[1]}/")
    expect(page.locator("ul.messages")).to_contain_text("Review of eva_airline__1_1_3 saved.")
    expect(page.locator("#result-nav")).to_contain_text("4 not reviewed")

    page.keyboard.press("p")  # previous in queue order
    page.wait_for_url(f"{live_site.url}/results/{ids[0]}/")
    expect(page.locator("#review-state")).to_contain_text("disagrees with the automatic verdict")
    expect(page.locator("#review-state")).to_contain_text("by tester")
    note = page.get_by_label("Note")
    expect(note).to_have_value("The agent never read the new flight back. <b>bold?</b>")
    assert page.locator("#review b").count() == 0  # typed markup stays text
    note.press("End")
    note.press("n")  # typing in the note never navigates
    assert page.url == f"{live_site.url}/results/{ids[0]}/"
    page.locator("h1").click()
    page.keyboard.press("n")
    page.wait_for_url(f"{live_site.url}/results/{ids[1]}/")
    page.keyboard.press("u")  # next needing review after this failure: the other failure
    page.wait_for_url(f"{live_site.url}/results/{ids[4]}/")
    shots(page, "result-review")

    page.goto(f"{live_site.url}/runs/{run_id}/")
    expect(page.locator("#run-facts")).to_contain_text("1 of 5 (0 agree, 1 disagree)")
    row = page.locator("#results tbody tr").first
    expect(row).to_contain_text("disagrees")


def test_the_result_page_shows_tool_results_stalls_and_what_was_misheard(page, live_site) -> None:  # noqa: F811
    from playwright.sync_api import expect

    result_id = seed(live_site, f"make_voice_result({_root(live_site)!r}, '20260301_000100')")
    page.goto(f"{live_site.url}/results/{result_id}/")
    stall = page.locator('#verdicts tr[data-field="insufficient_agent_turns"] .badge')
    expect(stall).to_have_text("yes: the stall rule fired")
    expect(stall).to_have_class(re.compile(r"\bfail\b"))  # not a green tick
    tool = page.locator(".tool-call").first
    result = tool.locator("details.tool-result")
    expect(result.locator("pre")).to_be_hidden()  # collapsed until asked for
    result.locator("summary").click()
    expect(result.locator("pre")).to_be_visible()
    expect(result.locator("pre")).to_contain_text('"error_type": "not_found"')
    misheard = page.locator(".misheard")
    expect(misheard).to_have_count(1)
    expect(misheard.locator("mark.entity")).to_have_text("ZK3FFW")
    expect(misheard.locator("q.heard-as")).to_have_text("said cat three")  # what the code became
    bars = page.locator("#latency-strip .bar")
    expect(bars).to_have_count(2)
    assert bars.nth(1).get_attribute("class") == "bar slow"
    expect(page.locator("#turn-4 .latency-chip")).to_have_text("↳ 9700 ms")
    # The player stays in view on a long page.
    page.mouse.wheel(0, 2500)
    page.wait_for_function("() => document.getElementById('player').getBoundingClientRect().top < 5")
    assert page.locator("#player").is_visible()


def test_compare_shows_deltas_with_intervals_flips_and_transcripts_side_by_side(page, live_site) -> None:  # noqa: F811
    from playwright.sync_api import expect

    root = _root(live_site)
    a = seed(live_site, f"make_run({root!r}, '20260302_000000', name='baseline', latency_ms=800.0, tokens=1000,"
                        " verdicts=[True, False, True, True, False, True, True, True, False, True, True, True])")
    b = seed(live_site, f"make_run({root!r}, '20260302_000100', name='candidate', latency_ms=1600.0, tokens=500,"
                        " verdicts=[True] * 12, flags={'concurrency': 2})")
    page.goto(f"{live_site.url}/runs/compare/?a={a}")
    expect(page.locator("#compare-b")).to_have_value("")  # B never defaults to A
    page.select_option("#compare-b", str(b))
    page.get_by_role("button", name="Compare").click()

    shared = page.locator('#compare-deltas tr[data-figure="Pass rate, shared scenarios"]')
    expected = rate_difference(9, 12, 12, 12)
    expect(shared).to_contain_text("75.0%")
    expect(shared).to_contain_text("100.0%")
    expect(shared.locator(".delta")).to_have_text("+25.0 pts")
    low, high = (f"{v * 100:+.1f}".replace("-", "\u2212") for v in (expected.low, expected.high))
    expect(shared.locator(".interval")).to_have_text(f"[{low}, {high}] pts")
    expect(shared).to_contain_text("no clear difference" if expected.low <= 0 <= expected.high else "better")
    latency = page.locator('#compare-deltas tr[data-figure="Latency p50"]')
    expect(latency.locator(".delta")).to_contain_text("+")
    expect(latency).to_contain_text("worse")  # twice as slow on every scenario
    tokens = page.locator('#compare-deltas tr[data-figure="Agent tokens per scenario"]')
    expect(tokens.locator(".delta")).to_have_text("\u2212500 tokens")
    expect(tokens).to_contain_text("better")
    flags = page.locator("#compare-flags tbody tr")
    expect(flags).to_have_count(1)  # only the flag that differs
    expect(flags.first).to_contain_text("concurrency")
    expect(page.locator("#compare-rows tbody tr")).to_have_count(12)
    shots(page, "compare")

    page.get_by_label("Flips only").check()
    page.get_by_role("button", name="Compare").click()
    rows = page.locator("#compare-rows tbody tr")
    expect(rows).to_have_count(3)
    for text in rows.all_inner_texts():
        assert "fail→pass" in text
    rows.first.locator("td").first.get_by_role("link").click()
    sides = page.locator(".side-by-side .side")
    expect(sides).to_have_count(2)
    expect(sides.nth(0)).to_contain_text("agent of 20260302_000000")
    expect(sides.nth(1)).to_contain_text("agent of 20260302_000100")
    expect(sides.nth(0)).to_contain_text("Sorry, I could not find it.")
    expect(sides.nth(1)).to_contain_text("Done.")
    shots(page, "compare-side-by-side")
    page.goto(f"{live_site.url}/runs/compare/?a={a}&b={a}")
    expect(page.get_by_role("alert")).to_contain_text("the same run")


def test_runs_get_names_tags_and_notes_and_the_list_filters_pages_and_compares(page, live_site) -> None:  # noqa: F811
    from playwright.sync_api import expect

    root = _root(live_site)
    mine = seed(live_site, f"make_run({root!r}, '20260303_000000', verdicts=[True, False], latency_ms=600.0,"
                           " tokens=100, owner='tester', modality='voice', agent='listening')")
    seed(live_site, f"[make_run({root!r}, '20260303_01%04d' % i, verdicts=[True], latency_ms=500.0, tokens=10)"
                    " for i in range(26)]")
    page.goto(f"{live_site.url}/runs/{mine}/")
    page.locator("details.annotate summary").click()
    page.get_by_label("Name").fill("<script>alert('x')</script> whisper base")
    page.get_by_label("Tags").fill("Baseline, whisper-base, baseline")
    page.get_by_label("Note").fill("Second try\nwith the base model")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#run-title")).to_have_text("<script>alert('x')</script> whisper base")
    expect(page.locator("p.tags .tag")).to_have_text(["baseline", "whisper-base"])
    expect(page.locator(".run-note")).to_contain_text("with the base model")
    page.locator("details.annotate summary").click()
    page.get_by_label("Tags").fill("no spaces allowed!")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("ul.messages")).to_contain_text("Tag 'allowed!'")
    expect(page.locator("p.tags .tag")).to_have_count(2)  # nothing saved

    page.goto(f"{live_site.url}/")
    expect(page.locator("nav.pager")).to_contain_text("Page 1 of")
    page.get_by_role("link", name="Older →").click()
    expect(page.locator("nav.pager")).to_contain_text("Page 2 of")
    page.goto(f"{live_site.url}/")
    page.select_option("#filter-tag", "baseline")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#runs tbody tr")).to_have_count(1)
    expect(page.locator("#runs tbody tr")).to_contain_text("whisper base")
    page.goto(f"{live_site.url}/?modality=voice&agent=listening")
    expect(page.locator(f'#runs a[href="/runs/{mine}/"]')).to_have_count(1)
    for text in page.locator("#runs tbody tr").all_inner_texts():
        assert "voice" in text and "listening" in text
    page.goto(f"{live_site.url}/?modality=%3Cscript%3E&page=999999")  # junk in the address bar
    expect(page.locator("nav.pager")).to_be_visible()

    page.goto(f"{live_site.url}/")
    button = page.get_by_role("button", name="Compare ticked runs")
    expect(button).to_be_disabled()
    boxes = page.locator('#runs input[name="run"]')
    boxes.nth(0).check()
    expect(button).to_be_disabled()
    boxes.nth(1).check()
    expect(button).to_be_enabled()
    expect(boxes.nth(2)).to_be_disabled()  # two at most
    ticked = sorted(int(boxes.nth(i).get_attribute("value")) for i in (0, 1))
    shots(page, "run-list")
    button.click()
    page.wait_for_url(re.compile(r"/runs/compare/\?a=\d+&b=\d+$"))
    assert page.url.endswith(f"?a={ticked[0]}&b={ticked[1]}")


def test_the_catalogue_is_grouped_and_searchable_and_a_scenario_page_offers_both_ways_in(page, live_site) -> None:  # noqa: F811
    from playwright.sync_api import expect

    page.goto(f"{live_site.url}/scenarios/")
    headings = page.locator(".scenario-group h2")
    expect(headings).to_have_count(7)
    assert [text.split()[0] for text in headings.all_inner_texts()] == [f"{n}.x" for n in range(1, 8)]
    expect(page.locator(".scenario-card")).to_have_count(50)
    assert "hash" not in page.locator("main").inner_text().lower()
    search = page.locator("#scenario-search")
    search.fill("1.1.3")
    expect(page.locator(".scenario-card:visible")).to_have_count(1)
    expect(page.locator(".scenario-group:visible")).to_have_count(1)
    expect(page.locator("#scenario-count")).to_have_text("1 of 50 shown")
    search.fill("refund")
    shown = page.locator(".scenario-card:visible").count()
    assert 1 <= shown < 50
    for card in page.locator(".scenario-card:visible").all():
        assert "refund" in card.get_attribute("data-search")  # name, id or full description
    shots(page, "catalogue-search")
    page.goto(f"{live_site.url}/scenarios/?q=zzzz-no-such")
    expect(page.locator("main")).to_contain_text("No scenario matches")

    page.goto(f"{live_site.url}/scenarios/")
    page.get_by_role("link", name="eva_airline__1_1_3").click()
    facts = page.locator("#scenario-facts")
    expect(facts).to_contain_text("1.1.3")
    expect(facts).to_contain_text("1.x: Voluntary date and segment changes")
    expect(page.locator("#passenger-goal")).not_to_have_text("—")
    expect(facts).to_contain_text("db_state_match")
    expect(page.get_by_role("link", name="Play the passenger")).to_have_attribute(
        "href", "/scenarios/eva_airline__1_1_3/call/")
    shots(page, "scenario-page")
    page.get_by_role("link", name="Run it").click()
    expect(page.locator('input[name="scope"][value="pick"]')).to_be_checked()
    expect(page.locator('input[name="scenarios"][value="eva_airline__1_1_3"]')).to_be_checked()
    expect(page.locator("#start-summary-text")).to_contain_text("1 scenario run (1 scenario × 1 trial)")


def test_every_page_has_a_skip_link_the_current_nav_item_local_times_and_fits_a_phone(page, live_site) -> None:  # noqa: F811
    from playwright.sync_api import expect

    run_id = seed(live_site, f"make_run({_root(live_site)!r}, '20260304_000000', verdicts=[True, False],"
                             " latency_ms=600.0, tokens=100)")
    page.goto(f"{live_site.url}/runs/{run_id}/")
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    skip.press("Enter")
    expect(page.locator("#main")).to_be_focused()
    expect(page.locator('nav[aria-label="Main"] a[aria-current="page"]')).to_have_text("Runs")
    started = page.locator("#run-facts time").first
    assert "UTC" not in started.inner_text() and re.search(r"\d{4}", started.inner_text())
    assert started.get_attribute("title")  # how long ago, on hover
    expect(page.locator('link[rel="icon"]')).to_have_attribute("href", "/static/favicon.svg")
    assert page.request.get(f"{live_site.url}/static/favicon.svg").ok
    live = page.locator("#live [aria-live]")
    expect(live).to_have_attribute("aria-live", "polite")
    expect(live.locator("#progress-text")).to_have_text("2/2")
    for path, current in (("/runs/compare/", "Compare"), ("/scenarios/", "Scenarios"), ("/runs/new/", "New run")):
        page.goto(live_site.url + path)
        expect(page.locator('nav[aria-label="Main"] a[aria-current="page"]')).to_have_text(current)
    for path in ("/", f"/runs/{run_id}/", "/runs/new/", "/scenarios/", "/scenarios/eva_airline__1_1_3/call/",
                 f"/runs/compare/?a={run_id}&b={run_id}"):
        page.goto(live_site.url + path)
        shots(page, "page" + re.sub(r"[^a-z0-9]+", "-", path).rstrip("-"))
