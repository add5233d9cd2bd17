"""Benchmark: throughput of the celery executor against the local one, on this machine, with the
real parts (redis-server broker, PostgreSQL rows, ``celery worker`` processes, ``run_eval``).

  text:  the 50 eva_airline scenarios, scenarios/minute with the local executor (--concurrency 1
         and 4) and with 1, 2 and 4 worker processes (each one pool process).
  voice: the 5 seeds, wall time with 1 and 2 worker processes (CPU-bound speech; run it niced).
  recovery: with the default settings (visibility timeout 900 + 120 s), a worker killed with
         ``kill -9`` mid-scenario: seconds from the kill until the scenario runs again on the
         other worker, and until the run is complete; alone, then with a queue behind it.
  coordinator: CPU seconds the coordinating ``run_eval`` spends per 1,000 attempts it watches
         (``--attempts`` null-agent text attempts on ``--workers`` worker processes): its whole
         process (minus a one-attempt run's start-up and finish) and its watch loop alone.

Run: nice -n 19 .venv/bin/python bench/scale_out.py [--part text|voice|recovery|coordinator|all]
Everything lives in a throw-away directory and cluster; it never touches your results.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.scoring.celery_helpers import slow_llm, wait_until  # noqa: E402
from tests.services import CeleryStack, CeleryWorkers  # noqa: E402 (the same real parts the fault tests use)

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


def kill_and_recover(stack: CeleryStack, passenger_url: str, scenarios: list[str], label: str) -> tuple[float, float]:
    """Seconds from ``kill -9`` of the worker running the first scenario until that scenario runs
    again (its directory moved aside, a new attempt writing), and until the run is complete."""
    name = scenarios[0]
    workers = CeleryWorkers(stack.root, stack.env).start(2)
    try:
        workers.wait_ready(timeout=300)
        before = set(stack.session_dirs())
        proc = stack.run_eval("--scenarios", *scenarios, "--modality", "text", "--user-model", "slow-passenger",
                              "--user-llm-url", passenger_url, "--duration", "8", "--inactivity-timeout", "0",
                              "--min-agent-turns", "0", "--executor", "celery", log_name=f"{label}.log")
        session = wait_until(lambda: next(iter(set(stack.session_dirs()) - before), None), 120, "the session",
                             every=0.05)
        wait_until((session / name / "bridge_log.txt").exists, 300, "the scenario to start", every=0.05)
        workers.kill(wait_until(lambda: _holder(stack, workers, name), 60, "the worker that holds it",
                                every=0.05)[0])
        killed = time.monotonic()
        wait_until(lambda: list(session.glob(f"{name}.killed.*")) and (session / name / "bridge_log.txt").exists(),
                   1200, "the scenario to run again", every=0.05)  # the figure: fine-grained
        again = time.monotonic() - killed
        if proc.wait(timeout=1200) != 0:
            raise SystemExit(f"{label} failed:\n{(stack.root / f'{label}.log').read_text()[-3000:]}")
        return again, time.monotonic() - killed
    finally:
        workers.stop()


def _holder(stack: CeleryStack, workers: CeleryWorkers, name: str) -> list[int]:
    """The worker whose pool process holds ``name``'s lease (its token names the pid)."""
    import redis

    client = redis.Redis.from_url(stack.redis.url)
    for key in client.scan_iter(match=f"evasite:lease:*:{name}"):
        token = client.get(key)
        if token:
            group = os.getpgid(int(token.decode().split(":")[1]))
            return [index for index, proc in enumerate(workers.procs) if proc.pid == group]
    return []


def coordinator_cpu(stack: CeleryStack, attempts: int, workers_count: int) -> tuple[float, float | None, float]:
    """CPU seconds of the coordinator's process for ``attempts`` attempts, minus those of a
    one-attempt run (start-up, dispatch, finish), its watch loop's own figure from
    ``evaluation_log.txt`` when it prints one, and the run's wall seconds."""
    trials = max(1, attempts // 50)
    workers = CeleryWorkers(stack.root, stack.env).start(workers_count)
    try:
        workers.wait_ready(timeout=300)
        measured = []
        for count, flags in ((1, ["--scenarios", "eva_airline__1_1_3"]),
                             (50 * trials, ["--domain", "eva_airline", "--trials", str(trials)])):
            before = set(stack.session_dirs())
            started = time.perf_counter()
            proc = stack.run_eval(*flags, "--modality", "text", "--agent-model", "null", "--executor", "celery",
                                  log_name=f"coordinator-{count}.log")
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                raise SystemExit(f"coordinator run failed:\n{(stack.root / f'coordinator-{count}.log').read_text()[-3000:]}")
            session = next(iter(set(stack.session_dirs()) - before))
            watch = re.search(r"Watched (\d+) scenario\(s\) on workers for [\d.]+ s: ([\d.]+) CPU s",
                              (session / "evaluation_log.txt").read_text())
            measured.append((usage.ru_utime + usage.ru_stime, float(watch.group(2)) if watch else None,
                             time.perf_counter() - started))
        (base_cpu, _, _), (cpu, watch_cpu, wall) = measured
        per_thousand = (cpu - base_cpu) / (50 * trials - 1) * 1000
        return per_thousand, None if watch_cpu is None else watch_cpu / (50 * trials) * 1000, wall
    finally:
        workers.stop()


def report(label: str, wall: float, passed: int, total: int) -> None:
    print(f"  {label:<28} {wall:7.1f} s wall  {total / wall * 60:7.1f} scenarios/min  {passed}/{total} passed",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("text", "voice", "recovery", "coordinator", "all"), default="text")
    parser.add_argument("--attempts", type=int, default=1000, help="coordinator part: attempts watched")
    parser.add_argument("--workers", type=int, default=4, help="coordinator part: worker processes")
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
            if args.part in ("recovery", "all"):
                print("Worker killed mid-scenario, default settings (8 s text attempts, 2 workers):", flush=True)
                with slow_llm(stack.root, 3600) as passenger:  # never answers: an attempt lasts its --duration
                    alone = [kill_and_recover(stack, passenger, SEEDS[:1], f"recovery-{rep}") for rep in range(3)]
                    for rep, (again, done) in enumerate(alone, 1):
                        print(f"  alone #{rep}: running again {again:5.1f} s after the kill, run complete {done:5.1f} s",
                              flush=True)
                    print(f"  alone, median: running again {statistics.median(a for a, _ in alone):.1f} s", flush=True)
                    again, done = kill_and_recover(stack, passenger, SEEDS, "recovery-queued")
                    print(f"  with 4 more scenarios on the queue: running again {again:5.1f} s after the kill, run complete {done:5.1f} s",
                          flush=True)
            if args.part in ("coordinator", "all"):
                per_thousand, watch, wall = coordinator_cpu(stack, args.attempts, args.workers)
                print(f"Coordinator CPU, {args.attempts} null-agent text attempts on {args.workers} workers "
                      f"({wall:.0f} s wall):", flush=True)
                print(f"  whole process: {per_thousand:.2f} CPU s per 1,000 attempts (start-up and finish excluded)",
                      flush=True)
                if watch is not None:
                    print(f"  watch loop:    {watch:.2f} CPU s per 1,000 attempts", flush=True)
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
