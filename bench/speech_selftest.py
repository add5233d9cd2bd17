"""Benchmark: the speech-chain self-test. Scenarios in voice with the listening agent and the
scripted passenger, once per ASR; prints pass rate, identity lookups per scenario and key-entity
accuracy per direction (user->agent, agent->user).

Run: nice -n 19 .venv/bin/python bench/speech_selftest.py [--stt whisper whisper-base pocketsphinx]
     [--scenarios all | 5 | NAME ...] [--concurrency 3] [--chunk 10] [--keep DIR]
``--keep`` leaves the session directories (transcripts, the agent's context) for reading.
All 50 scenarios take roughly 15 minutes per ASR on 2 cores; ``--scenarios 5`` runs the seeds.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speech_runs import REPO, SEEDS, run_voice  # noqa: E402


def scenario_names(spec: list[str]) -> list[str]:
    if spec == ["5"]:
        return SEEDS
    if spec != ["all"]:
        return spec
    sys.path.insert(0, str(REPO))
    import django
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evasite.settings")
    django.setup()
    from scenarios.registry import load_all, scenarios_in_domain

    load_all()
    return list(scenarios_in_domain("eva_airline"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stt", nargs="+", default=["whisper", "whisper-base", "pocketsphinx"])
    parser.add_argument("--scenarios", nargs="+", default=["all"])
    parser.add_argument("--concurrency", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=0, help="run this many scenarios at a time, printing as it goes")
    parser.add_argument("--keep", type=Path, help="keep the session directories under this directory")
    args = parser.parse_args()
    names = scenario_names(args.scenarios)
    print(f"speech-chain self-test: {len(names)} scenarios, voice, listening + scripted, concurrency {args.concurrency}")
    for stt in args.stt:
        runs = []
        size = args.chunk or len(names)
        for start in range(0, len(names), size):
            keep = args.keep / f"{stt}-{start}" if args.keep else None
            runs.append(run_voice(names[start:start + size], concurrency=args.concurrency, stt=stt, keep=keep))
            report(stt, runs, final=start + size >= len(names))


def report(stt: str, runs: list, *, final: bool) -> None:
    """Cumulative figures over the chunks run so far."""
    metrics = [m for run in runs for m in run.metrics]
    lookups = [run.lookups.get(m["scenario_name"], 0) for run in runs for m in run.metrics]
    passed = sum(run.passed for run in runs)
    rates = {}
    for direction in ("user_to_agent", "agent_to_user"):
        spoken = sum(int(((m.get("key_entity_accuracy") or {}).get(direction) or {}).get("spoken") or 0) for m in metrics)
        intact = sum(int(((m.get("key_entity_accuracy") or {}).get(direction) or {}).get("intact") or 0) for m in metrics)
        rates[direction] = round(intact / spoken, 3) if spoken else None
    spread = Counter(lookups)
    label = "" if final else " (so far)"
    print(f"  {stt:>13}{label}: {passed}/{len(metrics)} pass; lookups per scenario mean "
          f"{sum(lookups) / max(1, len(lookups)):.2f} ({', '.join(f'{k}: {v}' for k, v in sorted(spread.items()))}); "
          f"entity accuracy user->agent {rates['user_to_agent']}, agent->user {rates['agent_to_user']}; "
          f"wall {sum(run.wall_s for run in runs):.0f} s", flush=True)
    failed = [m["scenario_name"] for m in metrics if m.get("is_successful") is not True]
    if final and failed:
        print(f"  {'':>13}  not passed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
