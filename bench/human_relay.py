"""Benchmark: what the server adds to a human call's audio, and whether two calls at once drop any.

Part 1 (in process, real WebRTC over loopback): an aiortc peer plays the browser, speaking a Piper
clip into a real call with the built-in agent through the bridge engine. Per 20 ms frame it
prints p50/p95 of the two hops the human peer adds (target p95 < 10 ms):
  * in:  browser frame decoded by aiortc -> read by the bridge (down-mix and queueing);
  * out: agent frame sent by the bridge's paced relay -> its Opus packet handed to aiortc's sender
    (the track encodes on the loop, voice.webrtc.opus: the encoding is included);
  * the event loop's own lag (how late a 5 ms sleep wakes), which every awaited hop inherits.
The relay's own per-frame work between them is bench/bridge_overhead.py's figure; its jitter
buffer (5 frames before playout starts) is a design delay, not work, and is not counted here.

Part 2 (real site, real Chromium): two testers call two scenarios at once on a daphne server;
each page's inbound-rtp counters (packets lost/discarded, concealed samples) are printed.

Run: .venv/bin/python bench/human_relay.py [--seconds 20] [--skip-browser]
"""
from __future__ import annotations

import argparse
import asyncio
import fractions
import os
import sys
import tempfile
import time
import wave
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evasite.settings")
os.environ.setdefault("EVASITE_PIPECAT_LOG_LEVEL", "ERROR")

LINE = "Hi, I need to change my flight to March twenty-fifth."
SEED = "eva_airline__voluntary_date_change"
OTHER = "eva_airline__cancellation_refund"


def _percentiles(values: list[float]) -> str:
    if not values:
        return "no frames"
    ordered = sorted(v * 1000 for v in values)
    p50 = ordered[len(ordered) // 2]
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"p50 {p50:.3f} ms, p95 {p95:.3f} ms, max {ordered[-1]:.3f} ms over {len(ordered)} frames"


async def _loop_lag(lags: list[float], period: float = 0.005) -> None:
    """How late the server's event loop wakes a 5 ms sleeper: the wait every awaited hop inherits."""
    while True:
        before = time.perf_counter()
        await asyncio.sleep(period)
        lags.append(max(0.0, time.perf_counter() - before - period))


async def _speech(text: str) -> tuple[bytes, int]:
    from tests.voice.speech_helpers import synthesize
    from voice.speech.piper_tts import make_piper_tts

    return await synthesize(make_piper_tts(), text)


def _browser_track(pcm48: bytes):
    """A 48 kHz mono track that says the clip after 2 s of silence, then stays silent (paced)."""
    import av
    from aiortc.mediastreams import MediaStreamTrack

    class Speaking(MediaStreamTrack):
        kind = "audio"

        def __init__(self) -> None:
            super().__init__()
            self._audio = bytes(2 * 96000) + pcm48
            self._pts = 0
            self._start = None

        async def recv(self):
            if self._start is None:
                self._start = time.monotonic()
            target = self._start + self._pts / 48000
            await asyncio.sleep(max(0, target - time.monotonic()))
            chunk = self._audio[self._pts * 2:(self._pts + 960) * 2].ljust(1920, b"\0")
            frame = av.AudioFrame(format="s16", layout="mono", samples=960)
            frame.planes[0].update(chunk)
            frame.sample_rate, frame.pts, frame.time_base = 48000, self._pts, fractions.Fraction(1, 48000)
            self._pts += 960
            return frame

    return Speaking()


async def relay_figures(seconds: float) -> None:
    import django

    django.setup()
    from aiortc import RTCPeerConnection, RTCSessionDescription

    from scoring.runs.attempt import session_inputs
    from scenarios.registry import get_eval_scenario
    from voice.audio.pcm import resample
    from voice.bridge.config import BridgeConfig
    from voice.bridge.engine import run_session
    from voice.human.peer import HumanPeer
    from voice.peers import PeerSpec, build_endpoint
    from voice.webrtc.config import allow_loopback_candidates
    from voice.webrtc.offer import Answer, answer_offer

    pcm, rate = await _speech(LINE)
    allow_loopback_candidates()
    browser = RTCPeerConnection()
    browser.addTrack(_browser_track(resample(pcm, rate, 48000)))
    heard = []

    @browser.on("track")
    def on_track(track) -> None:
        async def drain() -> None:
            while True:
                try:
                    heard.append(await track.recv())
                except Exception:
                    return
        asyncio.ensure_future(drain())

    await browser.setLocalDescription(await browser.createOffer())
    peer = HumanPeer(modality="voice", measure=True)
    answer = await answer_offer({"sdp": browser.localDescription.sdp, "type": "offer"}, setup=peer.attach)
    assert isinstance(answer, Answer), answer
    await browser.setRemoteDescription(RTCSessionDescription(sdp=answer.sdp, type=answer.type))
    await asyncio.wait_for(peer.connected.wait(), 20)
    scenario = get_eval_scenario(SEED)
    lags: list[float] = []
    monitor = asyncio.ensure_future(_loop_lag(lags))
    started = time.monotonic()
    outcome = await run_session(
        scenario_inputs=session_inputs(scenario),
        agent=build_endpoint(PeerSpec("agent", model="listening"), modality="voice"),
        user=peer,
        config=BridgeConfig(modality="voice", duration_seconds=seconds, inactivity_timeout=0),
    )
    monitor.cancel()
    await peer.aclose()
    await browser.close()
    print(f"Part 1: one call, {time.monotonic() - started:.1f} s, stop {outcome.stop_reason}, "
          f"{len(outcome.turns)} turns: " + " | ".join(f"{t['role']}: {t['text'][:40]}" for t in outcome.turns))
    print(f"  browser frame in  -> bridge     : {_percentiles(list(peer.inbound_delays))}")
    print(f"  bridge relay out  -> Opus packet: {_percentiles(list(peer.track.delays))}")
    print(f"  event-loop lag (5 ms sleeps)  : {_percentiles(lags)}")
    print(f"  frames the browser received: {len(heard)}; dropped by the server: in {peer.dropped_inbound}, "
          f"out {peer.track.dropped}")


INBOUND = "() => window.__webrtcProbe.inbound()"


def two_calls(seconds: float) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from playwright.sync_api import sync_playwright

    from tests.browser import CHROMIUM, CHROMIUM_ARGS, log_in, start_site
    from tests.webrtc_probe import webrtc_probe

    root = Path(tempfile.mkdtemp(prefix="human_relay_"))
    silence = root / "silence.wav"
    with wave.open(str(silence), "wb") as out:
        out.setnchannels(1), out.setsampwidth(2), out.setframerate(48000), out.writeframes(bytes(192000))
    site = start_site(root / "site")
    site.python("from django.contrib.auth import get_user_model\n"
                "get_user_model().objects.create_user('second', password='second-pw-123')")
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                 args=[*CHROMIUM_ARGS, f"--use-file-for-fake-audio-capture={silence}"])
            pages = []
            for user, password, scenario in (("tester", None, SEED), ("second", "second-pw-123", OTHER)):
                context = browser.new_context()
                context.add_init_script(webrtc_probe(fake_microphone=True))  # the clips are the microphone
                page = context.new_page()
                log_in(page, site, user, password) if password else log_in(page, site)
                page.goto(f"{site.url}/scenarios/{scenario}/call/")
                page.select_option("#agent-model", "gold-replay")
                pages.append(page)
            for page in pages:
                page.get_by_role("button", name="Call").click()
            for page in pages:
                page.wait_for_function("document.getElementById('call-state').textContent.startsWith('Connected')",
                                       timeout=90_000)
            with ThreadPoolExecutor(max_workers=1) as pool:
                pcm, rate = pool.submit(asyncio.run, _speech(LINE)).result()
            import base64

            clip = base64.b64encode(pcm).decode()
            time.sleep(6)  # the agents greet
            for page in pages:
                page.evaluate("([b, r]) => { window.__webrtcProbe.speak(b, r); }", [clip, rate])
            time.sleep(max(0, seconds - 6))
            print(f"Part 2: two concurrent calls, {seconds:.0f} s each (gold-replay agents, Piper/Whisper defaults)")
            for index, page in enumerate(pages, 1):
                stats = page.evaluate(INBOUND) or {}
                keys = ("packetsReceived", "packetsLost", "packetsDiscarded", "concealedSamples",
                        "totalSamplesReceived", "jitter", "jitterBufferDelay", "jitterBufferEmittedCount")
                print(f"  call {index}: " + ", ".join(f"{k}={stats.get(k)}" for k in keys))
                page.get_by_role("button", name="Hang up").click()
            for page in pages:
                page.wait_for_url("**/results/*/", timeout=60_000)
            browser.close()
    finally:
        site.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--skip-browser", action="store_true")
    args = parser.parse_args()
    asyncio.run(relay_figures(args.seconds))
    if not args.skip_browser:
        two_calls(args.seconds)


if __name__ == "__main__":
    main()
