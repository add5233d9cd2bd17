"""Benchmark: how many voice sessions the machine carries. Runs the five seeds (or ``--scenarios``) in voice
(listening agent, scripted passenger, Piper + Whisper tiny.en) at concurrency 1, 2, 4, 6, 8 and prints
wall time, CPU seconds per scenario, passes, and user->agent handoff latency p50/p95 at each.

Run: nice -n 19 .venv/bin/python bench/speech_concurrency.py [--levels 1 2 4 6 8] [--stt whisper] [--processes 1 2]
     [--scenarios NAME ...]   (eight calls at once need eight scenarios: the seeds and three more)
About 8 minutes per level at concurrency 1 with the five seeds, less at higher levels. ``--processes`` runs each level
with the local executor's attempts spread over that many worker processes (one table row each).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speech_runs import SEEDS, machine_speed, median, percentile, run_voice  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2, 4, 6, 8])
    parser.add_argument("--stt", default="whisper")
    parser.add_argument("--processes", type=int, nargs="+", default=[1])
    parser.add_argument("--scenarios", nargs="+", default=SEEDS)
    args = parser.parse_args()
    print(f"{len(args.scenarios)} scenarios, voice, listening + scripted, STT {args.stt}, {os.cpu_count()} CPUs")
    print(f"before: {machine_speed()}", flush=True)
    print(f"{'proc':>4} {'conc':>4} {'wall s':>7} {'cpu s/scen':>10} {'pass':>5} {'lat p50 ms':>10} {'lat p95 ms':>10} {'wall/speech':>11}")
    for processes, level in ((p, level) for p in args.processes for level in args.levels):
        run = run_voice(args.scenarios, concurrency=level, stt=args.stt, extra_args=("--processes", str(processes)))
        latencies = run.latencies_ms()
        ratio = median([m["scenario_duration"] / run.speech_s[m["scenario_name"]] for m in run.metrics
                        if run.speech_s.get(m["scenario_name"])])
        print(f"{processes:>4} {level:>4} {run.wall_s:>7.1f} {run.cpu_s / len(run.metrics):>10.1f} {run.passed:>3}/{len(run.metrics)}"
              f" {median(latencies):>10.0f} {percentile(latencies, 0.95):>10.0f} {ratio:>11.2f}", flush=True)
    print(f"after: {machine_speed()}")


if __name__ == "__main__":
    main()
