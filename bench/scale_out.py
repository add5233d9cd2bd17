"""Benchmark: throughput of the celery executor against the local one, on this machine, with the
real parts (redis-server broker, PostgreSQL rows, ``celery worker`` processes, ``run_eval``).

  text:  the 50 eva_airline scenarios, scenarios/minute with the local executor (--concurrency 1
         and 4) and with 1, 2 and 4 worker processes (each one pool process).
  voice: the 5 seeds, wall time with 1 and 2 worker processes (CPU-bound speech; run it niced).

Run: nice -n 19 .venv/bin/python bench/scale_out.py [--part text|voice|all]
Everything lives in a throw-away directory and cluster; it never touches your results.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.services import CeleryStack  # noqa: E402 (the same real parts the fault tests use)

SEEDS = ["eva_airline__voluntary_date_change", "eva_airline__irrops_cancellation",
         "eva_airline__missed_flight_standby", "eva_airline__cancellation_refund",
         "eva_airline__escalation_edge_case"]


def timed_run(stack: CeleryStack, flags: list[str], label: str) -> tuple[float, int, int]:
    """Wall seconds of one ``run_eval`` (process start included), passes and scenario count."""
    before = set(stack.session_dirs())
    started = time.perf_counter()
    proc = stack.run_eval(*flags, log_name=f"{label}.log")
    if proc.wait(timeout=3600) != 0:
        raise SystemExit(f"{label} failed:\n{(stack.root / f'{label}.log').read_text()[-3000:]}")
    wall = time.perf_counter() - started
    session = next(iter(set(stack.session_dirs()) - before))
    metrics = json.loads((session / "all_metrics.json").read_text())
    return wall, sum(m.get("is_successful") is True for m in metrics), len(metrics)


def with_workers(stack: CeleryStack, count: int, flags: list[str], label: str) -> tuple[float, int, int]:
    workers = stack.workers().start(count)
    try:
        workers.wait_ready(timeout=300)
        return timed_run(stack, [*flags, "--executor", "celery"], label)
    finally:
        workers.stop()


def report(label: str, wall: float, passed: int, total: int) -> None:
    print(f"  {label:<28} {wall:7.1f} s wall  {total / wall * 60:7.1f} scenarios/min  {passed}/{total} passed",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("text", "voice", "all"), default="text")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evasite-scale-") as tmp:
        stack = CeleryStack(Path(tmp)).start()
        try:
            if args.part in ("text", "all"):
                flags = ["--domain", "eva_airline", "--modality", "text"]
                print("50 scenarios, text modality (the default built-in models):", flush=True)
                for concurrency in (1, 4):
                    report(f"local --concurrency {concurrency}",
                           *timed_run(stack, [*flags, "--executor", "local", "--concurrency", str(concurrency)],
                                      f"text-local-{concurrency}"))
                for count in (1, 2, 4):
                    report(f"celery, {count} worker process(es)", *with_workers(stack, count, flags, f"text-{count}"))
            if args.part in ("voice", "all"):
                flags = ["--scenarios", *SEEDS, "--modality", "voice"]
                print("5 seeds, voice modality (Piper TTS, offline ASR, real-time pacing):", flush=True)
                for count in (1, 2):
                    report(f"celery, {count} worker process(es)", *with_workers(stack, count, flags, f"voice-{count}"))
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
