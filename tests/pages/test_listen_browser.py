"""Listen in, end to end: Chromium logs in, starts a short voice run from /runs/new/ (it runs
inside the daphne process), presses Listen on the running scenario and must receive the call's
audio over WebRTC; Stop listening and Listen again toggle it; when the scenario ends the server
ends the call and the page lets go of it."""
from __future__ import annotations

import time

import pytest

from tests.browser import chromium, log_in, start_site  # noqa: F401 - chromium is a fixture
from tests.webrtc_probe import webrtc_probe

pytestmark = pytest.mark.slow

# Both sides speak with espeak-ng and hear with pocketsphinx: the lightest real speech stack.
# INFO logging: daphne announces its port at INFO, which LiveSite.start waits for.
SITE_ENV = {"EVASITE_TTS": "espeak", "EVASITE_STT": "pocketsphinx", "EVASITE_LOG_LEVEL": "INFO"}


@pytest.fixture(scope="module")
def listen_site(tmp_path_factory):
    site = start_site(tmp_path_factory.mktemp("listen_site"), **SITE_ENV)
    try:
        yield site
    finally:
        site.stop()


INBOUND_AUDIO = """async () => {
  const report = await window.__webrtcProbe.inbound();
  if (!report) return null;
  return {bytes: report.bytesReceived || 0, packets: report.packetsReceived || 0,
          energy: report.totalAudioEnergy || 0, level: report.audioLevel || 0};
}"""
STATE = "(url) => document.querySelector(`[data-listen-url='${url}']`).dataset.listenState"
# After the call: true once the button is idle or gone with its card, false while it still holds the call.
LET_GO = """(url) => {
  const button = document.querySelector(`[data-listen-url='${url}']`);
  return !button || !["listening", "connecting"].includes(button.dataset.listenState);
}"""
LABEL = "(url) => { const b = document.querySelector(`[data-listen-url='${url}']`); return b ? b.textContent : null; }"


def start_voice_run(page, site) -> str:
    page.goto(f"{site.url}/runs/new/")
    page.check('input[name="scope"][value="pick"]')
    first = page.locator('input[name="scenarios"]').first.get_attribute("value")
    page.check(f'input[name="scenarios"][value="{first}"]')
    page.select_option('[name="modality"]', "voice")
    page.fill('[name="agent_model"]', "gold-replay")
    page.fill('[name="user_model"]', "scripted")
    page.fill('[name="duration"]', "25")
    page.get_by_role("button", name="Start run").click()
    page.wait_for_url("**/runs/*/", timeout=30_000)
    return first


@pytest.mark.quiet  # real-time speech heard live: first on the CPUs (scripts/test.sh)
def test_listen_plays_the_live_call_and_ends_with_it(listen_site, chromium):  # noqa: F811
    context = chromium.new_context()
    context.add_init_script(webrtc_probe())  # test-side: the page's peer connections, for their counters
    page = context.new_page()
    try:
        log_in(page, listen_site)
        start_voice_run(page, listen_site)
        button = page.locator("button[data-listen-url]").first
        button.wait_for(state="visible", timeout=30_000)
        url = button.get_attribute("data-listen-url")
        button.click()
        page.wait_for_function(
            "(url) => document.querySelector(`[data-listen-url='${url}']`).dataset.listenState === 'listening'",
            arg=url, timeout=20_000)
        assert button.inner_text() == "Stop listening"

        heard = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            heard = page.evaluate(INBOUND_AUDIO)
            if heard and heard["bytes"] > 20_000 and heard["energy"] > 0:
                break
            time.sleep(0.5)
        assert heard and heard["packets"] > 100 and heard["energy"] > 0, f"no call audio reached the page: {heard}"
        print(f"browser received {heard['packets']} packets, {heard['bytes']} bytes, energy {heard['energy']:.3g}")

        button.click()  # Stop listening, then listen again: the button toggles, the call goes on
        page.wait_for_function(f"(url) => ({STATE})(url) === 'idle'", arg=url, timeout=5_000)
        assert button.inner_text() == "Listen"
        assert page.evaluate("() => window.__webrtcProbe.peers[0].connectionState") == "closed"
        button.click()
        page.wait_for_function(
            "(url) => document.querySelector(`[data-listen-url='${url}']`).dataset.listenState === 'listening'",
            arg=url, timeout=20_000)

        # The scenario ends (duration 25 s at most): the server hangs up and the page lets go. The
        # button reads "Listen" again until the scenario's finish drops its card (ending a listen still
        # open), which may come first.
        page.wait_for_function(LET_GO, arg=url, timeout=60_000)
        assert page.evaluate(LABEL, url) in ("Listen", None)
        assert page.evaluate("() => window.__webrtcProbe.peers.every((pc) => pc.connectionState === 'closed')")
        page.wait_for_function(f"(url) => ({LABEL})(url) === null", arg=url, timeout=30_000)
        page.screenshot(path=str(listen_site.root / "listen.png"))
    finally:
        context.close()
