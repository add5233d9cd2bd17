"""Benchmark: how much each audio condition costs the listening agent's verdicts. One run_eval in
voice (listening agent, scripted passenger, Piper + Whisper) over the scenarios under every
condition, then the run's own degradation table (scoring.core.condition_table): pass rate with
its 95% interval, key-entity accuracy per direction, handoff p50/p95 and yield time p50/p95.

Run: nice -n 19 .venv/bin/python bench/degradation.py [--scenarios ...] [--conditions LIST]
     [--stt whisper|whisper-base] [--concurrency 3] [--keep DIR]
About 90 s of wall time per scenario × condition at concurrency 3 on an idle 2-core machine.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from speech_runs import SEEDS, run_voice  # noqa: E402

from scoring.core.condition_table import condition_table_of  # noqa: E402

DEFAULT_CONDITIONS = ("clean,phone,phone:loss=5%,noise:snr=10,noise:snr=5,noise:snr=0,noise:babble:snr=5,"
                      "noise:babble:snr=0,rate:1.3,voice:espeak,barge-in")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", nargs="+", default=SEEDS)
    parser.add_argument("--conditions", default=DEFAULT_CONDITIONS)
    parser.add_argument("--stt", default="whisper", help="EVASITE_STT: whisper (tiny.en) or whisper-base")
    parser.add_argument("--concurrency", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="Keep the run's session directory under this folder.")
    args = parser.parse_args()
    run = run_voice(args.scenarios, concurrency=args.concurrency, stt=args.stt, keep=args.keep,
                    extra_args=("--conditions", args.conditions))
    print(f"{len(args.scenarios)} scenarios, voice, listening + scripted, STT {args.stt}, concurrency "
          f"{args.concurrency}, {os.cpu_count()} CPUs: {run.wall_s:.0f} s wall, {run.cpu_s:.0f} s CPU")
    print(f"{'condition':<24} {'pass':>5} {'95% CI':>11} {'user→agent':>10} {'agent→user':>10} "
          f"{'handoff p50/p95 ms':>19} {'yield p50/p95 ms':>17}")
    for row in condition_table_of(run.metrics, min_agent_turns=3):
        low, high = row.interval or (None, None)
        entities = {direction: (intact / spoken if spoken else None)
                    for direction, (intact, spoken) in row.entities.items()}
        print(f"{row.name:<24} {row.passes:>2}/{row.counted:<2} {_pct(low):>5}–{_pct(high):<5} "
              f"{_pct(entities.get('user_to_agent')):>10} {_pct(entities.get('agent_to_user')):>10} "
              f"{_ms(row.handoff_p50_ms):>9}/{_ms(row.handoff_p95_ms):<9} "
              f"{_ms(row.yield_p50_ms):>8}/{_ms(row.yield_p95_ms):<8}", flush=True)


if __name__ == "__main__":
    main()
