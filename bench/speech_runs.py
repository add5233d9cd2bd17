"""Shared by the speech benches: run ``manage.py run_eval`` in voice modality in a throw-away
directory and read back what the benches print (pass, latency, CPU, lookups, entity accuracy).

Not a benchmark itself. Each run is a subprocess so its CPU time can be measured on its own.
"""
from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

REPO = Path(__file__).resolve().parent.parent
SEEDS = ["eva_airline__voluntary_date_change", "eva_airline__irrops_cancellation",
         "eva_airline__missed_flight_standby", "eva_airline__cancellation_refund",
         "eva_airline__escalation_edge_case"]


@dataclass
class VoiceRun:
    """What one run_eval invocation measured."""

    wall_s: float
    cpu_s: float
    metrics: list[dict[str, Any]]
    lookups: dict[str, int] = field(default_factory=dict)
    """get_reservation calls the agent made, per scenario."""
    speech_s: dict[str, float] = field(default_factory=dict)
    """Seconds of speech (sum of segment durations), per scenario."""

    @property
    def passed(self) -> int:
        return sum(m.get("is_successful") is True for m in self.metrics)

    def latencies_ms(self) -> list[float]:
        return [float(x["latency_ms"]) for m in self.metrics for x in (m.get("latencies") or [])
                if isinstance(x, dict) and "latency_ms" in x]

    def entity_rate(self, direction: str) -> Optional[float]:
        spoken = intact = 0
        for m in self.metrics:
            counts = (m.get("key_entity_accuracy") or {}).get(direction) or {}
            spoken += int(counts.get("spoken") or 0)
            intact += int(counts.get("intact") or 0)
        return intact / spoken if spoken else None


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def run_voice(scenarios: list[str], *, concurrency: int, stt: str = "whisper", agent: str = "listening",
              extra_env: Optional[dict[str, str]] = None, keep: Optional[Path] = None,
              extra_args: tuple[str, ...] = ()) -> VoiceRun:
    """One run_eval in voice modality (``extra_args`` appended to its flags, e.g. ``--conditions``);
    its output is kept under ``keep`` when given."""
    with tempfile.TemporaryDirectory() as tmp:
        out = keep or Path(tmp)
        env = {**os.environ, "EVASITE_SQLITE_PATH": str(Path(tmp) / "db.sqlite3"), "EVASITE_STT": stt,
               **(extra_env or {})}
        manage = [sys.executable, "manage.py"]
        subprocess.run([*manage, "migrate", "-v", "0"], cwd=REPO, env=env, check=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run([*manage, "run_eval", "--modality", "voice", "--agent-model", agent,
                        "--concurrency", str(concurrency), "--max-auto-retries", "0", "--output-dir", str(out),
                        *extra_args, "--scenarios", *scenarios], cwd=REPO, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        session = sorted(out.glob("eval_*"))[-1]
        metrics = json.loads((session / "all_metrics.json").read_text())
        run = VoiceRun(wall_s=wall, cpu_s=cpu, metrics=metrics)
        for m in metrics:
            name, scenario_dir = m["scenario_name"], Path(m["scenario_directory"])
            run.lookups[name] = _lookups(scenario_dir)
            run.speech_s[name] = _speech_seconds(scenario_dir)
        return run


def _speech_seconds(scenario_dir: Path) -> float:
    """Seconds of speech in the call: the sum of its segments (conversation_log.seglst.json)."""
    try:
        segments = json.loads((scenario_dir / "conversation_log.seglst.json").read_text())
    except (OSError, ValueError):
        return 0.0
    return sum(max(0.0, float(s["end_time"]) - float(s["start_time"])) for s in segments)


def _lookups(scenario_dir: Path) -> int:
    path = scenario_dir / "bot_logs_agent" / "llm_context.json"
    try:
        messages = json.loads(path.read_text())
    except (OSError, ValueError):
        return 0
    if isinstance(messages, dict):
        messages = messages.get("messages") or []
    return sum(1 for m in messages if isinstance(m, dict)
               for call in (m.get("tool_calls") or []) if call.get("function", {}).get("name") == "get_reservation")


REFERENCE_TEXT = ("Your confirmation code is Z, K, three, F, F, W. The new flight leaves on March twenty fifth "
                  "at nine forty in the morning, and there is no fare difference.")


def machine_speed() -> str:
    """One fixed piece of work timed in a fresh process: Piper, one thread, no sampling noise, the
    same sentence five times. Why: these shared machines run 1.5 times slower on some hours than
    on others, so a table's CPU and latency figures are read beside the speed they were taken at."""
    code = ("import sys, time; sys.path.insert(0, sys.argv[1]);"
            "from piper import SynthesisConfig;"
            "from voice.speech.piper_tts import JOE_VOICE, _loaded_voice, bundled_voice_dir;"
            "v = _loaded_voice(str(bundled_voice_dir() / f'{JOE_VOICE}.onnx'), 1);"
            "c = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0); list(v.synthesize('Warm up.', c));"
            "t = time.thread_time(); n = sum(len(x.audio_int16_bytes) for _ in range(5) for x in v.synthesize(sys.argv[2], c));"
            "print(f'{time.thread_time() - t:.2f} {n / 2 / v.config.sample_rate:.1f}')")
    done = subprocess.run([sys.executable, "-c", code, str(REPO), REFERENCE_TEXT], capture_output=True, text=True,
                          check=True)
    cpu, audio = done.stdout.split()[-2:]
    return f"machine speed: Piper on one thread rendered {audio} s of speech in {cpu} CPU s"
