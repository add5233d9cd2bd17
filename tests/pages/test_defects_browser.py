"""Issue 16's five defects, each as a person meets it in Chromium against a live daphne:
1. a recording seeks to the turn that was clicked; 2. the run page follows a run to its end (and
through a cancel) without a reload and in the site's words; 3. the New-run scenario filter hides
what does not match; 4. New run says what it will start and asks once for big runs, Cancel asks
first; 5. human calls are labelled as such and kept out of the benchmark list."""
from __future__ import annotations

import re

import pytest

from tests.browser import chromium, live_site, log_in  # noqa: F401 (fixtures)
from tests.pages.seed_site import VOICE_TURNS
from tests.pages.ui_browser import seed, shots

pytestmark = pytest.mark.slow(seconds=18)
TEXT_SCENARIOS = ["eva_airline__1_1_3", "eva_airline__1_1_4", "eva_airline__1_1_5"]


class Dialogs:
    """Answers the page's confirm() dialogs (dismissed unless ``accept`` is set) and keeps their text."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.accept = False

    def __call__(self, dialog) -> None:
        self.messages.append(dialog.message)
        if self.accept:
            dialog.accept()
        else:
            dialog.dismiss()


@pytest.fixture
def page(chromium, live_site):  # noqa: F811
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.dialogs = Dialogs()
    page.on("dialog", page.dialogs)
    log_in(page, live_site)
    yield page
    context.close()


def _run_id(page) -> int:
    return int(re.search(r"/runs/(\d+)/", page.url).group(1))


def _start_picked_text_run(page, site, names: list[str]) -> int:
    page.goto(f"{site.url}/runs/new/")
    page.check('input[name="scope"][value="pick"]')
    for name in names:
        page.check(f'input[name="scenarios"][value="{name}"]')
    page.select_option('[name="modality"]', "text")
    page.fill('[name="agent_model"]', "gold-replay")
    page.get_by_role("button", name="Start run").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    return _run_id(page)


# --- 1 ------------------------------------------------------------------------------------------


def test_clicking_a_turn_plays_the_recording_from_that_turn(page, live_site) -> None:  # noqa: F811
    from playwright.sync_api import expect

    result_id = seed(live_site, f"make_voice_result({str(live_site.output_dir)!r}, '20260101_000001')")
    page.goto(f"{live_site.url}/results/{result_id}/")
    audio = page.locator("#conversation-audio")
    page.wait_for_function("() => document.getElementById('conversation-audio').readyState >= 1")
    # The server answers byte ranges, so the whole recording is seekable (it was [[0, 0]]).
    assert page.evaluate("() => { const a = document.getElementById('conversation-audio');"
                         " return a.seekable.length ? a.seekable.end(0) : 0; }") > 39
    page.evaluate("() => { window.__seeks = []; document.getElementById('conversation-audio')"
                  ".addEventListener('seeked', (e) => window.__seeks.push(e.target.currentTime)); }")
    last = page.locator("#timeline .turn[data-start]").nth(4)
    assert last.get_attribute("data-start") == "33.700"
    last.click()
    page.wait_for_function("() => window.__seeks.length > 0")
    landed = page.evaluate("() => window.__seeks[0]")
    assert abs(landed - 33.7) < 0.5, landed
    expect(last).to_have_class(re.compile(r"\bcurrent\b"))  # the playing turn is highlighted
    expect(page.locator("#turn-timeline .segment.current")).to_have_attribute("data-turn", "4")
    assert page.evaluate("() => !document.getElementById('conversation-audio').paused")

    # The turn timeline above the transcript seeks too.
    page.locator("#turn-timeline .segment").nth(1).click()
    page.wait_for_function("() => window.__seeks.length > 1")
    assert abs(page.evaluate("() => window.__seeks[1]") - VOICE_TURNS[1][3]) < 0.5
    audio.evaluate("a => a.pause()")
    ranged = page.request.get(f"{live_site.url}/results/{result_id}/artifact/conversation_log.wav",
                              headers={"Range": "bytes=1000-1999"})
    assert ranged.status == 206 and ranged.headers["content-range"].startswith("bytes 1000-1999/")
    assert len(ranged.body()) == 1000 and ranged.headers["accept-ranges"] == "bytes"
    shots(page, "result-voice")


# --- 2 ------------------------------------------------------------------------------------------


def test_the_run_page_follows_the_run_to_its_end_without_a_reload(page, live_site) -> None:  # noqa: F811
    from playwright.sync_api import expect

    run_id = _start_picked_text_run(page, live_site, TEXT_SCENARIOS)
    page.evaluate("window.__sameDocument = true")
    expect(page.locator("#run-status")).to_have_text("finished", timeout=90_000)
    expect(page.locator("#results tbody tr")).to_have_count(3)
    expect(page.locator("#progress-text")).to_have_text("3/3")
    expect(page.locator("#run-counts")).to_have_text("3 passed / 3 with a result / 3 queued")
    expect(page.locator("#chart-groups svg rect.bar-pass").first).to_be_attached()
    expect(page.locator("#chart-latency")).to_be_visible()
    expect(page.locator("#run-summary pre.summary")).to_contain_text("Success Rate")
    expect(page.locator("#run-finished-at time")).to_be_attached()
    expect(page.get_by_role("button", name="Cancel")).to_have_count(0)
    expect(page.get_by_role("button", name="Resume")).to_have_count(0)
    expect(page.locator("#live-status")).to_have_text("The run finished.")
    body = page.locator("main").inner_text()
    assert "Reload" not in body and "No scenario results" not in body
    assert page.evaluate("window.__sameDocument === true")  # all of it without a reload
    shots(page, f"run-finished-{run_id}")


def test_a_cancelled_run_says_so_in_the_sites_words(page, live_site) -> None:  # noqa: F811
    from playwright.sync_api import expect

    page.goto(f"{live_site.url}/runs/new/")
    page.check('input[name="scope"][value="all"]')
    page.select_option('[name="modality"]', "text")
    page.fill('[name="agent_model"]', "gold-replay")
    page.fill('[name="concurrency"]', "1")
    page.get_by_role("button", name="Start run").click()  # 50 text attempts: no confirmation
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    run_id = _run_id(page)
    page.evaluate("window.__sameDocument = true")
    expect(page.locator("#live-finished .chip").first).to_be_attached(timeout=60_000)

    cancel = page.get_by_role("button", name="Cancel")
    cancel.click()  # the dialog is dismissed: nothing happens
    assert page.dialogs.messages and "Cancel this run?" in page.dialogs.messages[-1]
    assert page.evaluate("window.__sameDocument === true")
    expect(cancel).to_be_visible()
    page.dialogs.accept = True
    cancel.click()
    page.wait_for_url(f"{live_site.url}/runs/{run_id}/")
    expect(page.locator("#run-status")).to_have_text("stopped")
    notice = page.locator("#run-notice .notice")
    expect(notice).to_contain_text("This run stopped before it finished. It was cancelled by tester.")
    expect(notice).to_contain_text("Resume runs the other")
    expect(page.get_by_role("button", name="Resume")).to_be_visible()
    expect(page.get_by_role("button", name="Cancel")).to_have_count(0)
    text = page.locator("main").inner_text()
    assert "--resume" not in text and "Ctrl-C" not in text and "Error" not in text
    shots(page, f"run-cancelled-{run_id}")

    # A Cancel that arrives after the run stopped (a stale tab) is told so, without CLI advice.
    token = page.locator('meta[name="csrf-token"]').get_attribute("content")
    late = page.request.post(f"{live_site.url}/runs/{run_id}/cancel/", form={"csrfmiddlewaretoken": token},
                             headers={"Referer": page.url}, max_redirects=0)
    assert late.status == 302  # the message waits for the next page, as after a click
    page.goto(f"{live_site.url}/runs/{run_id}/")
    message = page.locator("ul.messages").inner_text()
    assert "has already stopped; there is nothing to cancel" in message and "Ctrl-C" not in message


# --- 3 ------------------------------------------------------------------------------------------


def test_the_scenario_filter_on_new_run_hides_what_does_not_match(page, live_site) -> None:  # noqa: F811
    from playwright.sync_api import expect

    page.goto(f"{live_site.url}/runs/new/")
    choices = page.locator(".scenario-choice")
    total = choices.count()
    assert total == 50
    labels = choices.all_inner_texts()
    page.fill("#scenario-filter", "1_1_3")
    expect(page.locator(".scenario-choice:visible")).to_have_count(1)
    expect(page.locator(".scenario-choice:visible")).to_contain_text("eva_airline__1_1_3")
    page.fill("#scenario-filter", "refund")
    expected = sum(1 for text in labels if "refund" in text.lower())
    expect(page.locator(".scenario-choice:visible")).to_have_count(expected)
    page.fill("#scenario-filter", "")
    expect(page.locator(".scenario-choice:visible")).to_have_count(total)


# --- 4 ------------------------------------------------------------------------------------------


def test_new_run_says_what_it_will_start_and_asks_once_for_a_big_run(page, live_site) -> None:  # noqa: F811
    from playwright.sync_api import expect

    seed(live_site, f"make_run({str(live_site.output_dir)!r}, '20250101_000000', verdicts=[True] * 12,"
                    " latency_ms=500.0, tokens=100)")  # text history: 2..13 s per scenario, median 7.5 s
    page.goto(f"{live_site.url}/runs/new/")
    summary = page.locator("#start-summary-text")
    expect(summary).to_contain_text("50 scenario runs (50 scenarios × 1 trial) in voice")
    expect(summary).to_contain_text("big run")
    runs_before = seed(live_site, "Run.objects.count()")
    page.get_by_role("button", name="Start run").click()  # the defaults: all 50 in voice
    confirm = page.locator("#start-confirm")
    expect(confirm).to_contain_text("This is a big run. It starts 50 voice scenario runs")
    assert "/runs/new/" in page.url and seed(live_site, "Run.objects.count()") == runs_before  # nothing started
    shots(page, "new-run-confirm")

    page.select_option('[name="modality"]', "text")
    page.fill('[name="trials"]', "2")
    page.fill('[name="concurrency"]', "2")
    # The estimate: the median duration of the finished text results so far, 50 rounds of 2 at a time.
    median, count = seed(live_site, "(lambda d: (statistics.median(d), len(d)))(list(ScenarioResult.objects.filter("
                                    "run__status='finished', run__modality='text').values_list('scenario_duration', flat=True)))")
    minutes = round(50 * median / 60)
    expect(summary).to_contain_text(f"100 scenario runs (50 scenarios × 2 trials) in text, 2 at a time: about {minutes} min, "
                                    f"judging by {count} recent text results")
    expect(confirm).to_be_hidden()  # the question was about the old fields
    page.check('input[name="scope"][value="pick"]')
    page.check('input[name="scenarios"][value="eva_airline__1_1_3"]')
    expect(summary).to_contain_text("2 scenario runs (1 scenario × 2 trials) in text")
    expect(summary).not_to_contain_text("big run")
    page.check('input[name="scope"][value="all"]')
    page.fill('[name="agent_model"]', "gold-replay")
    page.get_by_role("button", name="Start run").click()
    expect(confirm).to_contain_text("It starts 100 text scenario runs")
    page.get_by_role("button", name="Yes, start 100 scenario runs").click()  # asked once, then it starts
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    page.dialogs.accept = True
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator("#run-status")).to_have_text("stopped")
    assert seed(live_site, "Run.objects.count()") == runs_before + 1


# --- 5 ------------------------------------------------------------------------------------------


def test_human_calls_say_who_played_and_stay_out_of_the_benchmark_list(page, live_site) -> None:  # noqa: F811
    from playwright.sync_api import expect

    run_id, result_id = seed(live_site, f"make_human_call({str(live_site.output_dir)!r}, '20260202_020202',"
                                        " tester='tester')")
    benchmark = seed(live_site, f"make_run({str(live_site.output_dir)!r}, '20260202_020203', verdicts=[True],"
                                " latency_ms=900.0, tokens=300)")
    page.goto(f"{live_site.url}/")
    expect(page.locator(f'main a[href="/runs/{benchmark}/"]').first).to_be_visible()
    expect(page.locator(f'main a[href="/runs/{run_id}/"]')).to_have_count(0)  # not a benchmark run
    page.select_option("#filter-source", "human")
    page.get_by_role("button", name="Filter").click()
    row = page.locator("#runs tbody tr", has=page.locator(f'a[href="/runs/{run_id}/"]'))
    expect(row).to_contain_text("tester (human)")
    assert "scripted" not in row.inner_text()
    shots(page, "run-list-human")
    page.goto(f"{live_site.url}/runs/{run_id}/")
    expect(page.locator("#run-passenger")).to_have_text("tester (human)")
    page.goto(f"{live_site.url}/results/{result_id}/")
    expect(page.locator("#played-by")).to_have_text("tester (human)")
    expect(page.locator("#result-sides")).to_contain_text("Played by tester (human)")
