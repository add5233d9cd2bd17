"""Benchmark: the bridge's own work per relayed audio frame (target: p95 under 5 ms).

Two paced relays (user->agent and agent->user, 16 ms frames at 16 kHz, as in a voice session)
run for ``--seconds`` while producers push 100 ms chunks of 24 kHz speech-like audio with
pauses. Each frame goes through the real path: drain + resample (soxr VHQ), jitter buffer,
protobuf encoding and a WebSocket send over loopback to a bot server that discards it. The
figure is the time the relay loop spends between two of its sleeps, i.e. the bridge's own
overhead per frame, excluding the pacing wait.

Run: .venv/bin/python bench/bridge_overhead.py [--seconds 10]
"""
from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from voice.bridge import relay as relay_module  # noqa: E402
from voice.bridge.relay import AudioRelay  # noqa: E402
from voice.protocol.channel import AudioChunk, ConnectionClosed  # noqa: E402
from voice.protocol.websocket import connect_websocket, serve_websocket  # noqa: E402


class _Sink:
    """A bot that reads and discards everything (stands in for a real bot's socket)."""

    async def serve(self, channel) -> None:
        try:
            while True:
                await channel.recv()
        except ConnectionClosed:
            return


class _TimedAsyncio:
    """asyncio, except that sleep() records when each loop iteration's work started and ended."""

    def __init__(self) -> None:
        self.work: list[float] = []
        self._woke: dict[int, float] = {}

    def __getattr__(self, name: str):
        return getattr(asyncio, name)

    async def sleep(self, delay: float) -> None:
        task = id(asyncio.current_task())
        now = time.perf_counter()
        if task in self._woke:
            self.work.append(now - self._woke[task])
        await asyncio.sleep(delay)
        self._woke[task] = time.perf_counter()


def _speech_chunk(rate: int, seconds: float, phase: int) -> bytes:
    n = int(rate * seconds)
    return b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 220 * (phase + i) / rate))) for i in range(n))


async def _produce(relay: AudioRelay, stop: float) -> None:
    chunk = _speech_chunk(24000, 0.1, 0)
    step = 0
    while time.monotonic() < stop:
        if step % 30 < 20:  # 2 s of speech, 1 s of pause
            relay.put(AudioChunk(chunk, 24000))
        step += 1
        await asyncio.sleep(0.1)


async def main(seconds: float) -> None:
    timed = _TimedAsyncio()
    relay_module.asyncio = timed  # instrument only the relay module's sleeps
    servers = [await serve_websocket(_Sink()) for _ in range(2)]
    channels = [await connect_websocket(server.url) for server in servers]
    relays = [AudioRelay(dest_rate=16000, frame_seconds=0.016) for _ in range(2)]
    stop = time.monotonic() + seconds
    loops = [asyncio.create_task(r.run(c.send, forwarding=lambda: True)) for r, c in zip(relays, channels)]
    await asyncio.gather(*(_produce(r, stop) for r in relays))
    for task in loops:
        task.cancel()
    await asyncio.gather(*loops, return_exceptions=True)
    for channel in channels:
        await channel.close()
    for server in servers:
        await server.close()
    work_ms = sorted(value * 1000 for value in timed.work)
    p95 = work_ms[int(len(work_ms) * 0.95)]
    print(f"bridge overhead per relayed frame over {len(work_ms)} frames ({seconds:.0f} s, 2 directions, WebSocket):")
    print(f"  p50 {statistics.median(work_ms):.3f} ms, p95 {p95:.3f} ms, max {work_ms[-1]:.3f} ms "
          f"(target p95 < 5 ms: {'met' if p95 < 5 else 'NOT met'})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    asyncio.run(main(parser.parse_args().seconds))
