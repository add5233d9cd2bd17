"""Print the figures of one ``check_real_server.sh`` pass from its session directory.

Reads only the run's files (``metrics.json`` per scenario, ``bot_logs_*/llm_context.json``), so
it states what a user of the results would see: completed scenarios, stop reasons, token usage
and where it came from, tool calls the model made, and errors.
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path


def _tool_calls(context_file: Path) -> Counter:
    try:
        messages = json.loads(context_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Counter()
    calls: Counter = Counter()
    for message in messages if isinstance(messages, list) else []:
        for call in (message.get("tool_calls") or []) if isinstance(message, dict) else []:
            calls[str((call.get("function") or {}).get("name"))] += 1
    return calls


def report(side: str, session: Path, exit_code: int, seconds: int, log: Path) -> bool:
    """Print the figures; True when every scenario ended with a stop reason and a score."""
    scenario_dirs = sorted(p.parent for p in session.glob("*/metrics.json")) if session.is_dir() else []
    stops: Counter = Counter()
    calls: Counter = Counter()
    tokens = {"n_calls": 0, "prompt": 0, "completion": 0, "without_usage": 0, "sources": set()}
    scored = 0
    for directory in scenario_dirs:
        metrics = json.loads((directory / "metrics.json").read_text(encoding="utf-8"))
        stops[str(metrics.get("stop_reason"))] += 1
        scored += isinstance(metrics.get("is_successful"), bool)
        usage = (metrics.get("token_usage") or {}).get(side) or {}
        tokens["n_calls"] += usage.get("n_calls") or 0
        tokens["prompt"] += usage.get("prompt") or 0
        tokens["completion"] += usage.get("completion") or 0
        tokens["without_usage"] += usage.get("calls_without_usage") or 0
        if usage.get("n_calls"):
            tokens["sources"].add(str(usage.get("source")))
        calls += _tool_calls(directory / f"bot_logs_{side}" / "llm_context.json")
    errors = [line for line in log.read_text(errors="replace").splitlines()
              if "Traceback" in line or "error" in line.lower()] if log.exists() else []
    successes = sum(1 for d in scenario_dirs
                    if json.loads((d / "metrics.json").read_text()).get("is_successful") is True)
    print(f"  run_eval exit code: {exit_code}, wall {seconds} s, session {session}")
    print(f"  scenarios completed: {len(scenario_dirs)}/5 (scored: {scored}, successful: {successes})")
    print(f"  stop reasons: {dict(stops)}")
    unknown = tokens["n_calls"] > 0 and tokens["without_usage"] == tokens["n_calls"]
    counts = ("prompt=unknown, completion=unknown" if unknown
              else f"prompt={tokens['prompt']}, completion={tokens['completion']}")
    print(f"  {side} token usage: {tokens['n_calls']} call(s), {counts}, "
          f"source={'/'.join(sorted(tokens['sources'])) or 'none'}, "
          f"{tokens['without_usage']} call(s) without usage")
    print(f"  tool calls made by the {side}: {sum(calls.values())} {dict(calls)}")
    print(f"  errors: {len(errors)}" + "".join(f"\n    {line[:160]}" for line in errors[:5]))
    return exit_code == 0 and len(scenario_dirs) == 5 and scored == 5 and "None" not in stops


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--side", choices=("agent", "user"), required=True)
    parser.add_argument("--session", required=True)
    parser.add_argument("--exit-code", type=int, required=True)
    parser.add_argument("--seconds", type=int, default=0)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    ok = report(args.side, Path(args.session), args.exit_code, args.seconds, Path(args.log))
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
