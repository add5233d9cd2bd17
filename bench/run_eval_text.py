"""Benchmark: wall time of the main job, the whole eva_airline domain in text modality with the
built-in models (gold-replay agent, scripted passenger), on run_eval's defaults unless told.

Run: .venv/bin/python bench/run_eval_text.py [--concurrency N] [--processes N] [--agent-model null]
Uses a throw-away output directory and SQLite file, so it never touches your results.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--concurrency", type=int, help="run_eval's default when not given")
    parser.add_argument("--processes", type=int, help="run_eval's default when not given")
    parser.add_argument("--agent-model", default="gold-replay")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "EVASITE_SQLITE_PATH": str(Path(tmp) / "db.sqlite3")}
        manage = [sys.executable, "manage.py"]
        subprocess.run([*manage, "migrate", "-v", "0"], cwd=REPO, env=env, check=True)
        flags = [*(["--concurrency", str(args.concurrency)] if args.concurrency else []),
                 *(["--processes", str(args.processes)] if args.processes else [])]
        started = time.perf_counter()
        subprocess.run([*manage, "run_eval", "--domain", "eva_airline", "--modality", "text", *flags,
                        "--agent-model", args.agent_model, "--output-dir", tmp],
                       cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - started
        metrics = json.loads(next(Path(tmp).glob("eval_*/all_metrics.json")).read_text())
    passed = sum(m.get("is_successful") is True for m in metrics)
    durations = sorted(m["scenario_duration"] for m in metrics)
    print(f"run_eval --domain eva_airline --modality text {' '.join(flags) or '(defaults)'} "
          f"--agent-model {args.agent_model}")
    print(f"  wall time {wall:.1f} s (process start included), {passed}/{len(metrics)} is_successful")
    print(f"  per-scenario duration: median {durations[len(durations) // 2]:.2f} s, max {durations[-1]:.2f} s")


if __name__ == "__main__":
    main()
