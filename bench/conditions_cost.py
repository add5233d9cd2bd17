"""Benchmark: what each audio condition costs per relayed frame (target: far below 5 ms).

Each condition processes ``--seconds`` of espeak-ng speech (with pauses) in ``--frame-ms``
chunks at each ``--rate``, one fresh, seeded instance per run, as the engine would for one
direction of a call. The figures are the time of one ``process()`` call over the frames: CPU time
of the calling thread (p50, p95: what the condition costs) and wall time (p50, p95: on a shared
machine this includes being preempted). ``prepare`` is the one-off build before the first frame
(filters, noise loop; babble is rendered once per machine, then read from its disk cache),
which the engine does off the event loop; ``first`` is the first frame after it.

Run: nice -n 19 .venv/bin/python bench/conditions_cost.py [--seconds 20] [--rate 16000 48000]
"""
from __future__ import annotations

import argparse
import io
import shutil
import statistics
import subprocess
import sys
import time
import wave
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from voice.conditions import parse_condition, prepare  # noqa: E402
from voice.conditions.base import float_to_pcm  # noqa: E402
from voice.conditions.dsp import resample_once  # noqa: E402

SPECS = [
    "clean", "noise:white:snr=10", "noise:pink:snr=5", "noise:babble:snr=0", "phone", "phone:loss=5%",
    "phone:loss=5%:plc=repeat", "phone:jitter=20ms", "noise:babble:snr=10+phone:loss=5%",
]
TEXT = ("My confirmation number is Z, K, three, F, F, W, and my last name is Rodriguez. "
        "I would like to move my flight to the twenty fifth of March, in the morning if possible.")


def speech(seconds: float, rate: int) -> bytes:
    """espeak-ng speech with half-second pauses, repeated to ``seconds`` at ``rate``."""
    done = subprocess.run([shutil.which("espeak-ng") or "espeak-ng", "--stdout", TEXT],
                          capture_output=True, check=True, timeout=60)
    with wave.open(io.BytesIO(done.stdout)) as clip:
        raw = np.frombuffer(clip.readframes(clip.getnframes()), dtype="<i2") / 32768.0
        sentence = resample_once(raw, clip.getframerate(), rate)
    piece = np.concatenate([sentence, np.zeros(rate // 2)])
    repeats = int(np.ceil(seconds * rate / piece.size))
    return float_to_pcm(np.tile(piece, repeats)[: int(seconds * rate)])


def measure(spec: str, pcm: bytes, rate: int, frame_bytes: int) -> tuple[float, float, list[float], list[float]]:
    """(prepare ms, first frame's wall ms, later frames' CPU ms, later frames' wall ms)."""
    condition = parse_condition(spec).audio_for("agent", stream="bench")
    began = time.perf_counter()
    prepare(condition, rate)
    prepared = (time.perf_counter() - began) * 1000.0
    cpu, wall = [], []
    for start in range(0, len(pcm) - frame_bytes + 1, frame_bytes):
        frame = pcm[start:start + frame_bytes]
        began, began_cpu = time.perf_counter(), time.thread_time()
        condition.process(frame, rate)
        cpu.append((time.thread_time() - began_cpu) * 1000.0)
        wall.append((time.perf_counter() - began) * 1000.0)
    return prepared, wall[0], cpu[1:], wall[1:]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--frame-ms", type=float, default=20.0)
    parser.add_argument("--rate", type=int, nargs="+", default=[16000, 48000])
    args = parser.parse_args()
    print(f"{args.frame_ms:g} ms frames, {args.seconds:g} s of speech per condition; times in ms")
    print(f"{'condition':40} {'rate':>6} {'prepare':>8} {'first':>6} {'cpu p50':>8} {'cpu p95':>8} {'wall p50':>9} {'wall p95':>9}")
    for rate in args.rate:
        pcm = speech(args.seconds, rate)
        frame_bytes = int(rate * args.frame_ms / 1000) * 2
        for spec in SPECS:
            prepared, first, cpu, wall = measure(spec, pcm, rate, frame_bytes)
            print(f"{spec:40} {rate:>6} {prepared:>8.1f} {first:>6.2f} {statistics.median(cpu):>8.3f} {percentile(cpu, 0.95):>8.3f} "
                  f"{statistics.median(wall):>9.3f} {percentile(wall, 0.95):>9.3f}")


if __name__ == "__main__":
    main()
