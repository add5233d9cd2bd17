"""The call page in Chromium: controls that look disabled when they are, the message box under the
transcript, the agent's state and what it heard shown live, the last lines readable when the
call ends (and the result one click away), the microphone meter and mute in a voice call, and
the call before the brief on a phone."""
from __future__ import annotations

import re

import pytest

from tests.browser import chromium, live_site, log_in  # noqa: F401 (fixtures)
from tests.pages.ui_browser import shots
from tests.voice.human.helpers import DONE, SEED, typed_reply
from tests.webrtc_probe import webrtc_probe

pytestmark = pytest.mark.slow(seconds=26)

# Test-side: every state the page shows, in order (the page itself keeps no history).
RECORD_STATES = """() => {
  window.__states = [];
  const node = document.getElementById('agent-state');
  new MutationObserver(() => window.__states.push(node.dataset.state)).observe(node, {attributes: true});
}"""


def _looks_disabled(locator) -> bool:
    style = locator.evaluate("b => { const s = getComputedStyle(b); return [s.opacity, s.cursor]; }")
    return float(style[0]) < 0.6 and style[1] == "not-allowed"


@pytest.fixture
def context(chromium):  # noqa: F811
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    context.add_init_script(webrtc_probe())
    yield context
    context.close()


def test_a_typed_call_shows_state_and_hearing_and_ends_readable(context, live_site) -> None:  # noqa: F811
    from playwright.sync_api import expect

    page = context.new_page()
    log_in(page, live_site)
    page.goto(f"{live_site.url}/scenarios/{SEED}/call/")
    mute, hangup = page.get_by_role("button", name="Mute"), page.get_by_role("button", name="Hang up")
    expect(mute).to_be_disabled()
    assert _looks_disabled(mute) and _looks_disabled(hangup)
    assert not _looks_disabled(page.get_by_role("button", name="Call"))
    page.evaluate(RECORD_STATES)
    page.get_by_role("button", name="Type instead").click()
    box = page.get_by_label("Your message")
    expect(box).to_be_visible(timeout=60_000)
    assert _looks_disabled(page.get_by_role("button", name="Call"))  # locked during the call
    transcript = page.locator("#transcript")
    assert page.locator("#say-form").bounding_box()["y"] >= transcript.bounding_box()["y"] + \
        transcript.bounding_box()["height"] - 1  # the message box sits below the transcript

    said = None
    for _ in range(12):
        agent_lines = page.locator("#transcript li.agent")
        expect(agent_lines.first).to_be_visible(timeout=60_000)
        if page.locator("#call-ended").is_visible():
            break
        count = agent_lines.count()
        said = typed_reply(agent_lines.last.inner_text(), SEED)
        box.fill(said)
        page.get_by_role("button", name="Send").click()
        expect(page.locator("#heard-live")).to_have_text(said)  # what the agent heard, shown live
        if said == DONE:  # the agent's goodbye may show a moment before the call has ended
            break
        page.wait_for_function(
            "(n) => document.querySelectorAll('#transcript li.agent').length > n"
            " || !document.getElementById('call-ended').hidden", arg=count, timeout=60_000)
        if page.locator("#call-ended").is_visible():
            break
    ended = page.locator("#call-ended")
    expect(ended).to_be_visible(timeout=60_000)
    page.get_by_role("button", name="Stay on this page").click()
    expect(ended).to_contain_text("Open the result when you are ready")
    last = page.locator("#transcript li").last
    expect(last).to_be_visible()  # the last line is still there to read
    assert "/call/" in page.url
    states = page.evaluate("() => window.__states")
    assert "listening" in states and "thinking" in states, states
    assert states.index("thinking") < len(states) - 1  # it went back to listening or idle after thinking
    shots(page, "call-ended")
    link = page.get_by_role("link", name="Open the result now")
    expect(link).to_have_attribute("href", re.compile(r"^/results/\d+/$"))
    link.click()
    page.wait_for_url(re.compile(r"/results/\d+/$"))
    expect(page.locator("#played-by")).to_have_text("tester (human)")


def test_a_voice_call_meters_the_microphone_mutes_it_and_shows_the_agent_speaking(context, live_site) -> None:  # noqa: F811
    from playwright.sync_api import expect

    page = context.new_page()
    log_in(page, live_site)
    page.goto(f"{live_site.url}/scenarios/{SEED}/call/")
    page.select_option("#agent-model", "gold-replay")
    page.evaluate(RECORD_STATES)
    page.get_by_role("button", name="Call").click()
    expect(page.locator("#call-state")).to_contain_text("Connected", timeout=90_000)
    # Chromium's fake microphone beeps: the meter moves.
    page.wait_for_function("() => document.getElementById('mic-level').value > 0.01", timeout=30_000)
    page.wait_for_function("() => window.__states.includes('speaking')", timeout=90_000)  # the greeting
    mute = page.get_by_role("button", name="Mute")
    mute.click()
    unmute = page.get_by_role("button", name="Unmute")
    expect(unmute).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#mic-note")).to_have_text("Muted: the agent hears silence.")
    assert page.evaluate("() => window.__webrtcProbe.peers[0].getSenders()"
                         ".every((s) => !s.track || s.track.enabled === false)")
    page.wait_for_function("() => document.getElementById('mic-level').value === 0")
    shots(page, "call-voice-live")
    unmute.click()
    assert page.evaluate("() => window.__webrtcProbe.peers[0].getSenders().some((s) => s.track && s.track.enabled)")
    page.get_by_role("button", name="Hang up").click()
    expect(page.locator("#call-ended")).to_be_visible(timeout=90_000)
    page.wait_for_url(re.compile(r"/results/\d+/$"), timeout=30_000)  # then the result opens by itself


def test_on_a_phone_the_call_comes_before_the_brief(context, live_site) -> None:  # noqa: F811
    page = context.new_page()
    page.set_viewport_size({"width": 390, "height": 800})
    log_in(page, live_site)
    page.goto(f"{live_site.url}/scenarios/{SEED}/call/")
    call = page.locator("#call").bounding_box()
    brief = page.locator(".call-brief").bounding_box()
    assert call["y"] + call["height"] <= brief["y"]
    page.set_viewport_size({"width": 1400, "height": 900})
    call, brief = page.locator("#call").bounding_box(), page.locator(".call-brief").bounding_box()
    assert brief["x"] < call["x"]  # side by side on a wide screen, the brief on the left
