"""Spoken human calls on a site served by several processes (``scripts/serve.sh``, two uvicorn
workers on one port, no Redis): each call's signalling reaches the process that holds it.

Which worker accepts a connection is the kernel's choice; the test makes it deterministic by
stopping (SIGSTOP) the other worker while a connection is made, since a stopped process accepts
nothing. The offer itself is sent while the call's own process is the stopped one and only the
other could take a new request: over HTTP it would reach the wrong process; over the call's
socket it waits for the right one.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import aiohttp
import pytest

from tests.browser import REPO, LiveSite
from tests.voice.human.helpers import OTHER_SEED, SEED, client_offer, logged_in_session, next_event, open_socket

pytestmark = pytest.mark.slow(seconds=40)
WORKERS = 2


class ServedSite(LiveSite):
    """The site under ``scripts/serve.sh`` with ``WORKERS`` processes instead of one daphne."""

    def start(self, timeout: float = 90) -> str:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        log = open(self.log_path, "a")
        self.process = subprocess.Popen(
            # A stopped worker answers no health check: uvicorn would kill it after the default 5 s.
            ["bash", str(REPO / "scripts" / "serve.sh"), "--workers", str(WORKERS), "--port", str(port),
             "--timeout-worker-healthcheck", "120"],
            cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            if len(self.workers()) == WORKERS and _answers(self.url):
                return self.url
            time.sleep(0.2)
        raise RuntimeError(f"serve.sh did not start:\n{self.log_path.read_text(errors='replace')[-4000:]}")

    def workers(self) -> list[int]:
        """The worker processes' pids (the supervisor's children that serve the application)."""
        assert self.process is not None
        found = []
        for child in _children(self.process.pid):
            try:
                cmdline = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:  # it ended since the list was read (a helper the supervisor started)
                continue
            if b"multiprocessing" in cmdline and b"resource_tracker" not in cmdline:
                found.append(child)
        return found


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"{url}/accounts/login/", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@contextmanager
def only(site: ServedSite, worker: int) -> Iterator[None]:
    """While inside, every other worker is stopped: ``worker`` alone accepts connections."""
    others = [pid for pid in site.workers() if pid != worker]
    for pid in others:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in others:
            os.kill(pid, signal.SIGCONT)


def _udp_ports(pid: int) -> set[int]:
    """Local UDP ports of ``pid``'s sockets (where its WebRTC peers listen)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("udp", "udp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def _candidate_ports(sdp: str) -> set[int]:
    return {int(line.split()[5]) for line in sdp.splitlines() if line.startswith("a=candidate:")}


@pytest.fixture(scope="module")
def served_site(tmp_path_factory) -> Iterator[ServedSite]:
    site = ServedSite(tmp_path_factory.mktemp("served"), {"EVASITE_TTS": "espeak", "EVASITE_STT": "pocketsphinx",
                                                          "EVASITE_CALL_INACTIVITY_TIMEOUT": "60"})
    site.prepare()
    site.start()
    try:
        yield site
    finally:
        site.stop()


async def test_each_worker_holds_its_own_spoken_call_and_its_offer_reaches_it(served_site):
    site = served_site
    first, second = site.workers()
    sessions, pcs, calls = [], [], []
    try:
        for holder, scenario in ((first, SEED), (second, OTHER_SEED)):
            with only(site, holder):
                session = await asyncio.wait_for(logged_in_session(site), 60)
                ws = await open_socket(session, site, f"/ws/call/{scenario}/")
            sessions.append(session)
            await ws.send_str(json.dumps({"type": "start", "modality": "voice", "agent": {"model": "gold-replay"}}))
            call = await next_event(ws, {"call"}, timeout=30)
            pc, offer = await client_offer()
            pcs.append(pc)
            # The call's own process stopped: a new request could only reach the other one.
            with only(site, next(pid for pid in (first, second) if pid != holder)):
                await ws.send_str(json.dumps({"type": "offer", "sdp": offer}))
                async with aiohttp.ClientSession(cookie_jar=session.cookie_jar,
                                                 connector=aiohttp.TCPConnector(force_close=True)) as fresh:
                    async with fresh.get(f"{site.url}/scenarios/") as response:
                        assert response.status == 200
            answer = await next_event(ws, {"answer", "offer-refused", "error"}, timeout=30)
            assert answer["type"] == "answer", answer
            # The answer's candidates are UDP ports of the process that accepted the call's socket.
            ports = _candidate_ports(answer["answer"]["sdp"])
            assert ports and ports <= _udp_ports(holder), (ports, _udp_ports(holder))
            from aiortc import RTCSessionDescription

            await pc.setRemoteDescription(RTCSessionDescription(**answer["answer"]))
            calls.append((ws, call))

        for ws, call in calls:  # both calls live at once, one in each process
            assert (await next_event(ws, {"state"}, timeout=60))["state"] == "live"
            assert (await next_event(ws, {"turn"}, timeout=60))["speaker"] == "Agent"
        ended = []
        for ws, _ in calls:
            await ws.send_str(json.dumps({"type": "hangup"}))
            ended.append(await next_event(ws, {"ended"}, timeout=60))
        assert [e["stop_reason"] for e in ended] == ["[SIMULATOR_EXIT]"] * 2
        stored = site.python(
            "from scoring.models import ScenarioResult\n"
            f"for pk in {[e['result_id'] for e in ended]}:\n"
            "    r = ScenarioResult.objects.select_related('run').get(pk=pk)\n"
            "    print(r.run.source, r.scenario_name, r.stop_reason)")
        assert stored.split("\n")[:2] == [f"human {SEED} [SIMULATOR_EXIT]", f"human {OTHER_SEED} [SIMULATOR_EXIT]"]
    finally:
        for pc in pcs:
            await pc.close()
        for session in sessions:
            await session.close()
