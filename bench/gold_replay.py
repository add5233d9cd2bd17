"""Benchmark: replay the gold call list of all 50 scenarios and compare with gold.

Run: .venv/bin/python bench/gold_replay.py [--repeat N]
Prints the wall time of one full pass (best and median of N) and the match count.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scenarios.data_root import dataset_index  # noqa: E402
from scenarios.domains.eva_airline.gold import gold_calls  # noqa: E402
from scoring.core.replay import replay_calls  # noqa: E402


def one_pass(ids: list[str]) -> tuple[float, int]:
    started = time.perf_counter()
    matched = sum(replay_calls(eva_id, eva_id, gold_calls(eva_id)).match for eva_id in ids)
    return time.perf_counter() - started, matched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    ids = sorted(dataset_index())
    one_pass(ids)  # warm the caches (dataset index, gold lists, imports)
    timings, matched = [], 0
    for _ in range(args.repeat):
        seconds, matched = one_pass(ids)
        timings.append(seconds)
    print(f"gold replay of {len(ids)} scenarios: {matched}/{len(ids)} matched")
    print(f"  best {min(timings) * 1000:.1f} ms, median {statistics.median(timings) * 1000:.1f} ms "
          f"per full pass ({args.repeat} passes; includes fixture parsing and hashing)")


if __name__ == "__main__":
    main()
