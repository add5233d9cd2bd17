"""Benchmark: what a voice call costs each side when the agent under test runs in its own process.

The concurrency and profile benches run both bots inside run_eval, so the machine pays for the
agent's speech as well as the harness's. Here the built-in ``listening`` agent is served by
``manage.py run_bot`` and reached with ``--agent-url``, as an agent under test would be; run_eval
keeps the simulated passenger (Piper, Whisper, VAD) and the bridge. The same scenario runs
``--trials`` times in sequence; each process's CPU is read from /proc whenever a call's
``metrics.json`` appears, so every call after the first (which also pays the imports and model
loads) is measured on its own.

Run: nice -n 19 .venv/bin/python bench/external_agent_cost.py [--scenario NAME] [--trials 3]
About 95 s per trial. Linux only (/proc).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speech_runs import REPO, machine_speed  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of process ``pid`` so far, all its threads included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


@contextlib.contextmanager
def served_agent(env: dict[str, str]) -> Iterator[tuple[int, str]]:
    """The built-in agent served on a free loopback port for the length of a ``with``: yields its
    process id and URL, then stops it."""
    agent = subprocess.Popen([sys.executable, "manage.py", "run_bot", "--role", "agent", "--port", "0",
                              "--modality", "voice"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
    try:
        line = agent.stdout.readline() if agent.stdout else ""
        if not line.startswith("Listening on "):
            raise SystemExit(f"the agent bot did not start: {line!r}")
        yield agent.pid, line.split()[2]
    finally:
        agent.kill()
        agent.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenario", default="eva_airline__voluntary_date_change")
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    if args.trials < 2:
        parser.error("--trials must be at least 2: the first call also pays the one-off loads")
    print(f"{args.scenario} x {args.trials} in sequence, voice, listening agent in its own process "
          f"(run_bot, --agent-url), scripted passenger in run_eval, {os.cpu_count()} CPUs")
    print(f"before: {machine_speed()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "EVASITE_SQLITE_PATH": str(Path(tmp) / "db.sqlite3")}
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=REPO, env=env, check=True)
        with served_agent(env) as (agent_pid, url):
            marks = measure(agent_pid, url, args, env, Path(tmp) / "out")
    report(marks)
    print(f"after: {machine_speed()}")


def measure(agent_pid: int, url: str, args: argparse.Namespace, env: dict[str, str], out: Path) -> list[tuple]:
    """(wall, harness CPU, agent CPU, metrics) at the harness's start and at each call's end."""
    harness = subprocess.Popen([sys.executable, "manage.py", "run_eval", "--modality", "voice", "--agent-url", url,
                                "--trials", str(args.trials), "--max-auto-retries", "0", "--output-dir", str(out),
                                "--scenarios", args.scenario], cwd=REPO, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    marks = [(time.monotonic(), 0.0, cpu_seconds(agent_pid), None)]
    seen: set[Path] = set()
    while True:
        harness_cpu = cpu_seconds(harness.pid)  # read before poll() reaps it: a zombie still shows its times
        done = harness.poll() is not None
        for path in sorted(set(out.glob("eval_*/*/metrics.json")) - seen, key=lambda p: p.stat().st_mtime):
            seen.add(path)
            marks.append((time.monotonic(), harness_cpu, cpu_seconds(agent_pid), json.loads(path.read_text())))
        if done:
            break
        time.sleep(0.25)
    if harness.returncode != 0:  # a failed scenario still exits 0: this is an error of the run itself
        raise SystemExit(f"run_eval exited {harness.returncode}")
    return marks


def report(marks: list[tuple]) -> None:
    print(f"{'call':>4} {'wall s':>7} {'harness cpu s':>13} {'cores':>6} {'agent cpu s':>11} {'cores':>6} "
          f"{'both':>6} {'pass':>5}")
    later = []
    for index, (before, after) in enumerate(zip(marks, marks[1:]), start=1):
        wall, harness, agent = after[0] - before[0], after[1] - before[1], after[2] - before[2]
        passed = "yes" if after[3].get("is_successful") is True else "no"
        note = "  (imports and model loads included)" if index == 1 else ""
        print(f"{index:>4} {wall:>7.1f} {harness:>13.1f} {harness / wall:>6.3f} {agent:>11.1f} {agent / wall:>6.3f} "
              f"{(harness + agent) / wall:>6.3f} {passed:>5}{note}")
        if index > 1:
            later.append((wall, harness, agent))
    if later:
        wall, harness, agent = (sum(x[i] for x in later) for i in range(3))
        print(f"calls 2-{len(marks) - 1}: the harness (passenger and bridge) {harness / wall:.3f} of a core per call, "
              f"the agent {agent / wall:.3f}, both {(harness + agent) / wall:.3f}")


if __name__ == "__main__":
    main()
