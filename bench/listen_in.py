"""Benchmark: what listening in costs the bridge, and how late a listener hears the call.

1. Tap cost: the time ``LiveTap.relayed`` adds to each relayed 16 ms frame (resample once per
   side to 48 kHz, push into every listener's bounded buffer) with 0, 1, 4 and 8 listeners.
   This is the only listening work that runs on the bridge's relay loop.
2. Live listeners: a relay-like producer feeds both sides (16 kHz, 16 ms frames, a click every
   0.5 s on the agent side) while N aiortc peers listen over loopback WebRTC through the real
   listen service. Figures: ear delay (click fed -> click decoded by the listener, p50/p95) and
   the process CPU per listener.

With ``--redis-url redis://127.0.0.1:PORT`` the live listeners reach the call the way a shell
or Celery run is reached: not through this process's registry but over the Redis channel layer
(voice.listen.remote), so the figures include the relay.

Run: .venv/bin/python bench/listen_in.py [--seconds 8] [--listeners 1 4] [--redis-url URL]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evasite.settings")
if "--redis-url" in sys.argv:  # settings read REDIS_URL once, at set-up
    os.environ["REDIS_URL"] = sys.argv[sys.argv.index("--redis-url") + 1]

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from aiortc import RTCPeerConnection, RTCSessionDescription  # noqa: E402
from aiortc.mediastreams import MediaStreamError  # noqa: E402

from voice.listen import registry, remote, service  # noqa: E402
from voice.listen.tap import LiveTap  # noqa: E402
from voice.protocol.channel import AudioChunk  # noqa: E402
from voice.webrtc.config import allow_loopback_candidates  # noqa: E402

RATE, FRAME_S = 16_000, 0.016
FRAME = int(RATE * FRAME_S)
CLICK_EVERY = 0.5


def speech_like(seconds: float) -> bytes:
    t = np.arange(int(RATE * seconds)) / RATE
    return (3000 * np.sin(2 * np.pi * 220 * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))).astype("<i2").tobytes()


async def tap_cost(listeners: int, frames: int = 3000) -> float:
    tap = LiveTap((0, "bench"), max_listeners=max(1, listeners))
    for _ in range(listeners):
        tap.add_listener()

    sides = ("agent", "user")
    pcm = speech_like(FRAME_S)
    chunk = AudioChunk(pcm, RATE)
    costs = []
    for i in range(frames):
        started = time.perf_counter()
        tap.relayed(sides[i % 2], chunk)
        costs.append(time.perf_counter() - started)
    return statistics.quantiles(costs, n=20)[18] * 1e6  # p95, microseconds


async def live(listeners: int, seconds: float, via_redis: bool) -> dict[str, float]:
    allow_loopback_candidates()
    key = (0, f"bench-{listeners}")
    tap = LiveTap(key, max_listeners=listeners)
    publisher = remote.publish(tap, key) if via_redis else None
    if via_redis:
        assert publisher is not None, "REDIS_URL did not give a Redis channel layer"
        await asyncio.sleep(0.5)  # the group is joined
    else:
        registry.register(key, tap)
    clicks: list[float] = []
    heard: list[list[float]] = [[] for _ in range(listeners)]
    peers = []

    async def consume(index: int, track) -> None:
        armed = True
        try:
            while True:
                frame = await track.recv()
                peak = np.abs(frame.to_ndarray()).max()
                if armed and peak > 12_000:
                    heard[index].append(time.monotonic())
                    armed = False
                elif peak < 6_000:
                    armed = True
        except MediaStreamError:
            return

    for index in range(listeners):
        pc = RTCPeerConnection()
        pc.addTransceiver("audio", direction="recvonly")
        pc.on("track", lambda track, i=index: asyncio.ensure_future(consume(i, track)))
        await pc.setLocalDescription(await pc.createOffer())
        answer = await service.listen_offer(key, {"sdp": pc.localDescription.sdp, "type": "offer"})
        await pc.setRemoteDescription(RTCSessionDescription(**answer.as_json()))
        peers.append(pc)

    def to_user(chunk: AudioChunk) -> None:
        tap.relayed("user", chunk)

    def to_agent(chunk: AudioChunk) -> None:
        tap.relayed("agent", chunk)

    quiet = bytes(FRAME * 2)
    voice = speech_like(FRAME_S)
    click = (np.ones(FRAME, dtype="<i2") * 28_000).tobytes()
    await asyncio.sleep(1.0)  # connect
    cpu0, wall0 = time.process_time(), time.monotonic()
    next_at, next_click = time.monotonic(), time.monotonic() + CLICK_EVERY
    while time.monotonic() - wall0 < seconds:
        now = time.monotonic()
        if now >= next_click:
            to_user(AudioChunk(click, RATE))  # the agent's voice travels towards the user
            clicks.append(time.monotonic())
            next_click += CLICK_EVERY
        else:
            to_user(AudioChunk(quiet, RATE))
        to_agent(AudioChunk(voice if int(now * 2) % 2 else quiet, RATE))
        next_at += FRAME_S
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
    cpu = time.process_time() - cpu0
    wall = time.monotonic() - wall0
    tap.close()
    registry.unregister(key, tap)
    if publisher is not None:
        publisher.cancel()
    await asyncio.sleep(0.5)
    for pc in peers:
        await pc.close()
    delays = []
    for times in heard:
        for heard_at in times:
            before = [c for c in clicks if c <= heard_at]
            if before:
                delays.append((heard_at - before[-1]) * 1000)
    quantiles = statistics.quantiles(delays, n=20) if len(delays) >= 2 else [float("nan")] * 19
    return {"clicks": len(clicks), "heard": len(delays), "p50_ms": statistics.median(delays) if delays else float("nan"),
            "p95_ms": quantiles[18], "cpu_pct": 100 * cpu / wall}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--listeners", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--redis-url", help="reach the call over this Redis channel layer")
    args = parser.parse_args()
    for count in (0, 1, 4, 8):
        print(f"tap cost per relayed frame, {count} listener(s): p95 {await tap_cost(count):.0f} us")
    for count in args.listeners:
        figures = await live(count, args.seconds, via_redis=bool(args.redis_url))
        path = "over Redis + loopback WebRTC" if args.redis_url else "over loopback WebRTC"
        print(f"{count} live listener(s) {path}: ear delay p50 {figures['p50_ms']:.0f} ms, "
              f"p95 {figures['p95_ms']:.0f} ms ({figures['heard']}/{figures['clicks'] * count} clicks heard), "
              f"process CPU {figures['cpu_pct']:.0f}% ({figures['cpu_pct'] / count:.0f}% per listener, "
              f"includes the aiortc receivers)")


if __name__ == "__main__":
    asyncio.run(main())
