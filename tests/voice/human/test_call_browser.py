"""A human call end to end in real Chromium: log in, open the call page, call, speak the passenger's
lines (Piper clips played through WebAudio into the outgoing track, as a fake microphone), and end
on the stored result; the "Type instead" mode when the microphone is denied; and two testers in
two browser contexts typing calls on two scenarios at once."""
from __future__ import annotations

import asyncio
import base64
import json
import re
import time
import wave
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.browser import CHROMIUM, CHROMIUM_ARGS, PASSWORD, USERNAME, LiveSite, log_in, require, start_site
from tests.voice.human.helpers import (ACCEPT, IDENTITY_SPOKEN, OTHER_SEED, SEED, reply_to, typed_identity,
                                      typed_reply)
from tests.webrtc_probe import webrtc_probe

pytestmark = pytest.mark.slow(seconds=35)

DENY_MICROPHONE = """
navigator.mediaDevices.getUserMedia = () => Promise.reject(new DOMException("Permission denied", "NotAllowedError"));
"""


def _silence_wav(path: Path, seconds: float = 2.0, rate: int = 48000) -> Path:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(bytes(int(seconds * rate) * 2))
    return path


@pytest.fixture(scope="module")
def call_site(tmp_path_factory) -> LiveSite:
    site = start_site(tmp_path_factory.mktemp("call_browser"))
    try:
        yield site
    finally:
        site.stop()


@pytest.fixture(scope="module")
def quiet_chromium(tmp_path_factory):
    """Chromium whose fake microphone is silent: the test's clips are the only speech."""
    require(Path(CHROMIUM).exists(), "Debian's chromium is not installed (scripts/setup.sh installs it)")
    from playwright.sync_api import sync_playwright

    silence = _silence_wav(tmp_path_factory.mktemp("media") / "silence.wav")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=[*CHROMIUM_ARGS, f"--use-file-for-fake-audio-capture={silence}"])
        try:
            yield browser
        finally:
            browser.close()


def _heard_right(line: str) -> Callable[[str], bool]:
    """What a transcript of ``line`` must yield for the agent to act on it as the tester meant."""
    from voice.bots.models.heard_identity import parse_confirmation, parse_last_name
    from voice.bots.models.listening import accepted

    if line == IDENTITY_SPOKEN:
        return lambda text: (parse_confirmation(text) == "ZK3FFW"
                             and (parse_last_name(text) or "").lower() == "rodriguez")
    if line == ACCEPT:
        return lambda text: accepted(text) is True
    return lambda text: bool(text.strip())


def _clips(lines: list[str]) -> dict[str, tuple[str, int]]:
    """Each line spoken by the project's own TTS (Piper), in a rendering Whisper hears right, as
    base64 s16le mono PCM (so the call's outcome does not hang on one lucky recognition)."""
    from tests.voice.speech_helpers import heard_right_clip

    async def speak_all() -> dict[str, tuple[str, int]]:
        out = {}
        for line in lines:
            pcm, rate, _ = await heard_right_clip(line, _heard_right(line))
            pad = bytes(int(rate * 0.3) * 2)  # a breath of silence either side, like a person
            out[line] = (base64.b64encode(pad + pcm + pad).decode(), rate)
        return out

    # Playwright's sync API owns this thread's event loop: synthesise on a thread of its own.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, speak_all()).result(timeout=300)


def _agent_turns(page) -> list[str]:
    return page.locator("#transcript li.agent").all_text_contents()


def _wait_for_turn_or_result(page, seen: int, timeout_s: float = 60) -> bool:
    """True when the agent said something new; False when the page went to the result."""
    page.wait_for_function(
        "(seen) => location.pathname.startsWith('/results/') || document.querySelectorAll('#transcript li.agent').length > seen",
        arg=seen, timeout=timeout_s * 1000)
    return "/results/" not in page.url


def _stored(site: LiveSite, result_id: int) -> dict:
    code = (
        "import json\nfrom pathlib import Path\nfrom scoring.models import ScenarioResult\n"
        f"r = ScenarioResult.objects.select_related('run__owner').get(pk={result_id})\n"
        "context = json.loads((Path(r.directory) / 'bot_logs_agent' / 'llm_context.json').read_text())\n"
        "calls = [c['function'] for m in context if isinstance(m, dict) for c in (m.get('tool_calls') or [])]\n"
        "print(json.dumps({'source': r.run.source, 'owner': r.run.owner.username, 'modality': r.run.modality,"
        " 'stop_reason': r.stop_reason, 'db_state_match': r.db_state_match, 'is_successful': r.is_successful,"
        " 'calls': calls, 'turns': r.metrics.get('total_turns'), 'wav': (Path(r.directory) / 'conversation_log.wav').is_file()}))"
    )
    return json.loads(site.python(code).strip().splitlines()[-1])


def _result_id(page) -> int:
    return int(re.search(r"/results/(\d+)/", page.url).group(1))


@pytest.mark.quiet  # Whisper hears a WebRTC microphone in real time: first on the CPUs (scripts/test.sh)
def test_a_spoken_call_reaches_the_agent_and_ends_on_the_stored_result(call_site, quiet_chromium):
    lines = [reply_to(text, spoken=True) for text in
             ("How can I help you today?", "May I have your confirmation number and last name?",
              "Shall I go ahead?", "Is there anything else I can help you with?")]
    clips = _clips(lines)
    context = quiet_chromium.new_context()
    context.add_init_script(webrtc_probe(fake_microphone=True))  # the clips are the microphone
    page = context.new_page()
    try:
        log_in(page, call_site)
        page.goto(f"{call_site.url}/scenarios/{SEED}/call/")
        brief = page.locator(".call-brief").inner_text()
        assert "Rodriguez" in brief and "Z, K, three, F, F, W" in brief
        page.get_by_role("button", name="Call").click()
        page.wait_for_function("document.getElementById('call-state').textContent.startsWith('Connected')",
                               timeout=60_000)
        assert page.get_by_role("button", name="Hang up").is_enabled()
        seen = 0
        for _ in range(12):  # the seed takes about six agent turns; the bound stops a loop
            if not _wait_for_turn_or_result(page, seen, timeout_s=90):
                break
            turns = _agent_turns(page)
            if seen == 0:  # the greeting was spoken: Chromium decoded the server's Opus packets
                inbound = page.evaluate("() => window.__webrtcProbe.inbound()")
                assert inbound["packetsReceived"] > 50 and inbound["totalSamplesReceived"] > 48_000, inbound
                # Mostly real audio, not concealment (a starved test machine delays some packets).
                assert inbound["concealedSamples"] < 0.5 * inbound["totalSamplesReceived"], inbound
            seen = len(turns)
            if turns[-1].endswith("[INTERRUPTED]"):
                continue  # an agent segment without words (around a tool call) asks nothing
            line = reply_to(turns[-1], spoken=True)
            b64, rate = clips[line]
            # Not awaited: the agent may end the call (and the page navigate) while a clip plays.
            page.evaluate("([b64, rate]) => { window.__webrtcProbe.speak(b64, rate); }", [b64, rate])
        page.wait_for_url("**/results/*/", timeout=90_000)
        expected = page.locator("dl.hashes dd").nth(0).inner_text()
        actual = page.locator("dl.hashes dd").nth(1).inner_text()
        stored = _stored(call_site, _result_id(page))
    finally:
        context.close()
    assert stored["source"] == "human" and stored["owner"] == "tester" and stored["modality"] == "voice"
    assert stored["wav"], "a voice call records conversation_log.wav"
    lookups = [json.loads(c["arguments"]) if isinstance(c["arguments"], str) else c["arguments"]
               for c in stored["calls"] if c["name"] == "get_reservation"]
    # The listening agent looked the booking up with what it heard the tester say.
    assert {"confirmation_number": "ZK3FFW", "last_name": "Rodriguez"} in [
        {k: str(v).upper() if k == "confirmation_number" else str(v) for k, v in lookup.items()} for lookup in lookups
    ], (stored, IDENTITY_SPOKEN)
    # ...and, told yes, made the change: the final database is the gold one, on the page and stored.
    names = [c["name"] for c in stored["calls"]]
    assert [n for n in names if n not in ("get_reservation", "end_conversation")], names
    assert expected == actual and len(actual) >= 32
    assert stored["db_state_match"] is True and stored["is_successful"] is True, stored
    assert stored["stop_reason"] == "[EXIT]", stored


def test_a_browser_without_webrtc_is_told_to_type_instead(call_site, quiet_chromium):
    context = quiet_chromium.new_context()
    context.add_init_script("delete window.RTCPeerConnection;")
    page = context.new_page()
    try:
        log_in(page, call_site)
        page.goto(f"{call_site.url}/scenarios/{SEED}/call/")
        page.get_by_role("button", name="Call").click()
        alert = page.get_by_role("alert")
        alert.wait_for(state="visible", timeout=10_000)
        assert "cannot make WebRTC calls" in alert.inner_text() and "Type instead" in alert.inner_text()
        assert page.get_by_role("button", name="Type instead").is_enabled()
        assert not page.get_by_role("button", name="Hang up").is_enabled()
    finally:
        context.close()


def test_type_instead_when_the_microphone_is_denied_lands_on_the_gold_hash(call_site, quiet_chromium):
    context = quiet_chromium.new_context()
    context.add_init_script(DENY_MICROPHONE)
    page = context.new_page()
    try:
        log_in(page, call_site)
        page.goto(f"{call_site.url}/scenarios/{SEED}/call/")
        page.get_by_role("button", name="Call").click()
        alert = page.get_by_role("alert")
        alert.wait_for(state="visible", timeout=10_000)
        assert "microphone" in alert.inner_text().lower() and "type instead" in alert.inner_text().lower()
        page.get_by_role("button", name="Type instead").click()
        box = page.get_by_label("Your message")
        box.wait_for(state="visible", timeout=60_000)
        seen = 0
        for _ in range(12):
            if not _wait_for_turn_or_result(page, seen):
                break
            log = page.get_by_role("log")
            turns = _agent_turns(page)
            seen = len(turns)
            assert log.locator("li").last.text_content().startswith("Agent:")
            try:
                box.fill(reply_to(turns[-1], spoken=False), timeout=15_000)
                page.get_by_role("button", name="Send").click(timeout=15_000)
            except PlaywrightTimeout:
                if "/results/" in page.url:
                    break  # that agent turn was its last: the call ended (and hid the box) while the reply was typed
                raise
            page.wait_for_function(  # the typed line comes back as the tester's turn
                "(n) => location.pathname.startsWith('/results/') || document.querySelectorAll('#transcript li.user').length >= n",
                arg=seen, timeout=30_000)
        page.wait_for_url("**/results/*/", timeout=60_000)
        expected = page.locator("dl.hashes dd").nth(0).inner_text()
        actual = page.locator("dl.hashes dd").nth(1).inner_text()
        stored = _stored(call_site, _result_id(page))
    finally:
        context.close()
    assert expected == actual and len(expected) >= 32
    assert stored["db_state_match"] is True and stored["is_successful"] is True
    assert stored["source"] == "human" and stored["modality"] == "text"


_SNAPSHOT = """() => ({
  path: location.pathname,
  agent: Array.from(document.querySelectorAll('#transcript li.agent'), (li) => li.textContent),
  user: Array.from(document.querySelectorAll('#transcript li.user'), (li) => li.textContent),
  typing: !document.getElementById('say-form').hidden,
})"""


class _TypedCaller:
    """One tester's "Type instead" call on its own page, advanced a step at a time so that two
    calls are in flight on the server together (Playwright's sync API drives one page at once)."""

    def __init__(self, page, scenario: str) -> None:
        self.page, self.scenario = page, scenario
        self.answered = 0
        self.said: list[str] = []

    def step(self) -> bool:
        """Answer the agent's newest line if there is one; False once the page shows the result."""
        from playwright.sync_api import Error

        try:
            now = self.page.evaluate(_SNAPSHOT)
        except Error:  # navigating to the result page
            return "/results/" not in self.page.url
        if now["path"].startswith("/results/"):
            return False
        if now["typing"] and len(now["agent"]) > self.answered and len(now["user"]) >= len(self.said):
            line = typed_reply(now["agent"][-1], self.scenario)
            try:
                self.page.get_by_label("Your message").fill(line, timeout=10_000)
                self.page.get_by_role("button", name="Send").click(timeout=10_000)
            except Error:  # the agent ended the call meanwhile: the next step sees the result page
                return True
            self.answered = len(now["agent"])
            self.said.append(line)
        return True


def test_two_testers_typing_at_once_in_two_browser_contexts_get_their_own_calls(call_site, quiet_chromium):
    call_site.python("from django.contrib.auth import get_user_model\n"
                     "get_user_model().objects.create_user('oscar', password='oscar-pw-123')")
    callers, contexts = [], []
    try:
        for (username, password), scenario in (((USERNAME, PASSWORD), SEED), (("oscar", "oscar-pw-123"), OTHER_SEED)):
            context = quiet_chromium.new_context()
            contexts.append(context)
            page = context.new_page()
            log_in(page, call_site, username, password)
            page.goto(f"{call_site.url}/scenarios/{scenario}/call/")
            callers.append(_TypedCaller(page, scenario))
        for caller in callers:  # both calls start before either is answered
            caller.page.get_by_role("button", name="Type instead").click()
        deadline = time.monotonic() + 240  # a hang guard: two typed calls take well under a minute
        active = list(callers)
        while active and time.monotonic() < deadline:
            active = [caller for caller in active if caller.step()]
            time.sleep(0.1)
        assert not active, "both calls end on their result pages"
        for caller in callers:
            caller.page.wait_for_url("**/results/*/", timeout=30_000)
        results = []
        for caller in callers:
            page = caller.page
            hashes = page.locator("dl.hashes dd")
            results.append({"expected": hashes.nth(0).inner_text(), "actual": hashes.nth(1).inner_text(),
                            "text": page.locator("#timeline").inner_text(), "said": caller.said,
                            **_stored(call_site, _result_id(page)), "id": _result_id(page)})
    finally:
        for context in contexts:
            context.close()
    mine, theirs = results
    assert mine["id"] != theirs["id"]
    assert (mine["owner"], theirs["owner"]) == (USERNAME, "oscar")
    assert mine["source"] == theirs["source"] == "human" and mine["modality"] == theirs["modality"] == "text"
    for result, other in ((mine, theirs), (theirs, mine)):
        assert result["expected"] == result["actual"] and len(result["actual"]) >= 32, result
        assert result["db_state_match"] is True and result["is_successful"] is True, result
        own_identity, other_identity = (typed_identity(name) for name in
                                        ((SEED, OTHER_SEED) if result is mine else (OTHER_SEED, SEED)))
        assert own_identity in result["said"]
        assert own_identity in result["text"] and other_identity not in result["text"]  # its own transcript only
    assert mine["actual"] != theirs["actual"]  # two scenarios, two DB copies, two final states
    spans = call_site.python(
        "from scoring.models import ScenarioResult\n"
        f"for pk in ({mine['id']}, {theirs['id']}):\n"
        "    run = ScenarioResult.objects.get(pk=pk).run\n"
        "    print(run.started_at.timestamp(), run.finished_at.timestamp(), run.session_dir)")
    (start_a, end_a, dir_a), (start_b, end_b, dir_b) = (line.split() for line in spans.strip().splitlines())
    assert float(start_a) < float(end_b) and float(start_b) < float(end_a), "the two calls overlapped"
    assert dir_a != dir_b
