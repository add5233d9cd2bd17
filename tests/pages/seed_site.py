"""Rows and files for browser tests, written straight into a live site's database (run inside it
with ``LiveSite.python``): runs with known verdicts, latencies and tokens, a voice result with a
real WAV recording, a human call. Each function prints nothing and returns ids."""
from __future__ import annotations

import json
import math
import statistics  # noqa: F401 - used by tests' seed expressions
import struct
import wave
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone

from scoring.models import Run, ScenarioResult

NAMES = [f"eva_airline__{n}" for n in ("1_1_3", "1_1_4", "1_1_5", "1_2_1", "1_2_2", "1_2_3", "1_3_1", "1_3_2",
                                       "2_1_2", "2_1_6", "2_2_2", "2_2_4")]


def _owner(username: str | None) -> Any:
    return get_user_model().objects.get(username=username) if username else None


def make_run(root: str, stamp: str, *, verdicts: list[bool | None], latency_ms: float, tokens: int,
             agent: str = "gold-replay", modality: str = "text", source: str = Run.Source.CLI,
             owner: str | None = None, name: str = "", flags: dict[str, Any] | None = None,
             entity_rate: float | None = None, status: str = Run.Status.FINISHED) -> int:
    """A finished run of ``len(verdicts)`` scenarios (``NAMES`` order); scenario k's handoffs
    take ``latency_ms * (1 + k / 10)``, its agent uses ``tokens + 10 k`` tokens."""
    session = Path(root) / f"eval_{stamp}"
    session.mkdir(parents=True, exist_ok=True)
    passed = sum(1 for v in verdicts if v)
    run = Run.objects.create(
        timestamp=stamp, session_dir=str(session), status=status, source=source, owner=_owner(owner),
        domain="eva_airline", modality=modality, agent_model=agent, user_model="scripted",
        **({"name": name} if name else {}),
        scenario_names=NAMES[: len(verdicts)], total_scenarios=len(verdicts), completed_scenarios=len(verdicts),
        successful_scenarios=passed, success_rate=passed / len(verdicts) if verdicts else None,
        parsed_args={"modality": modality, "agent_model": agent, "user_model": "scripted", "concurrency": 1,
                     **(flags or {})},
        finished_at=timezone.now() if status != Run.Status.RUNNING else None,
        summary_text="EVALUATION SUMMARY\nOverall success rate: %.2f%%\n" % (100 * passed / max(1, len(verdicts))))
    for k, verdict in enumerate(verdicts):
        name_k = NAMES[k]
        value = latency_ms * (1 + k / 10)
        metrics = {
            "scenario_name": name_k, "scenario_directory": str(session / name_k), "is_successful": verdict,
            "stop_reason": "[EXIT]" if verdict else "[TIMEOUT]", "total_turns": 6 + k % 3,
            "turns": [{"role": "agent", "text": f"Hello, this is the agent of {stamp}.", "timestamp": "t0"},
                      {"role": "user", "text": f"I need help with {name_k}.", "timestamp": "t1"},
                      {"role": "agent", "text": "Done." if verdict else "Sorry, I could not find it.",
                       "timestamp": "t2"}],
            "latencies": [{"user_transcript": "I need help", "agent_transcript": "Done.", "latency_ms": value},
                          {"user_transcript": "Thanks", "agent_transcript": "Bye", "latency_ms": value * 1.2}],
            "latency_stats": {"count": 2, "p50_ms": value * 1.2, "p95_ms": value * 1.2, "mean_ms": value * 1.1,
                              "min_ms": value, "max_ms": value * 1.2},
            "token_usage": {"agent": {"n_calls": 3, "prompt": tokens + 10 * k, "completion": 0, "source": "estimate"}},
            "scenario_duration": 2.0 + k,
        }
        if entity_rate is not None:
            metrics["key_entity_accuracy"] = {"user_to_agent": {"spoken": 10, "intact": round(entity_rate * 10),
                                                                "rate": entity_rate}}
        ScenarioResult.objects.create(
            run=run, scenario_name=name_k, position=k, directory=str(session / name_k), metrics=metrics,
            is_successful=verdict, stop_reason=metrics["stop_reason"], total_turns=metrics["total_turns"],
            scenario_duration=metrics["scenario_duration"])
    return run.pk


def _write_wav(path: Path, seconds: float, rate: int = 16000) -> None:
    """A quiet 220 Hz tone: a real, decodable recording of a known length."""
    frames = bytearray()
    for i in range(int(seconds * rate)):
        frames += struct.pack("<h", int(1500 * math.sin(2 * math.pi * 220 * i / rate)))
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(bytes(frames))


VOICE_TURNS = [  # (role, text, heard, start, end)
    ("agent", "Thank you for calling. How can I help you today?", None, 0.5, 4.0),
    ("user", "My confirmation number is ZK3FFW and my last name is Rodriguez.",
     "my confirmation number is said cat three and my last name is rodriguez", 5.2, 10.8),
    ("agent", "Let me look that up for you.", None, 12.0, 14.5),
    ("user", "Please move me to the flight on March 25.", "please move me to the flight on march 25", 20.1, 24.0),
    ("agent", "Done: you are on SK621 on March 25. Anything else?", None, 33.7, 38.2),
]


def make_voice_result(root: str, stamp: str, *, owner: str | None = None, seconds: float = 40.0) -> int:
    """A failed voice result with a recording, its turn segments, a tool call with its result and
    a misheard code; returns the result id."""
    session = Path(root) / f"eval_{stamp}"
    directory = session / "eva_airline__voluntary_date_change"
    (directory / "bot_logs_agent").mkdir(parents=True, exist_ok=True)
    _write_wav(directory / "conversation_log.wav", seconds)
    (directory / "conversation_log.seglst.json").write_text(json.dumps([
        {"session_id": "x", "words": text, "speaker": role, "start_time": start, "end_time": end}
        for role, text, heard, start, end in VOICE_TURNS]))
    context = [
        {"role": "system", "content": "..."},
        {"role": "assistant", "content": VOICE_TURNS[0][1]},
        {"role": "assistant", "tool_calls": [{"id": "c1", "function": {
            "name": "get_reservation", "arguments": json.dumps({"confirmation_number": "CZ3FFW", "last_name": "Rodriguez"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps({
            "status": "error", "error_type": "not_found", "message": "No reservation CZ3FFW for Rodriguez"})},
        {"role": "assistant", "content": VOICE_TURNS[2][1]},
    ]
    (directory / "bot_logs_agent" / "llm_context.json").write_text(json.dumps(context))
    run = Run.objects.create(
        timestamp=stamp, session_dir=str(session), status=Run.Status.FINISHED, modality="voice",
        agent_model="listening", user_model="scripted", owner=_owner(owner), domain="eva_airline",
        scenario_names=["eva_airline__voluntary_date_change"], total_scenarios=1, completed_scenarios=1,
        successful_scenarios=0, success_rate=0.0, finished_at=timezone.now())
    metrics = {
        "scenario_name": "eva_airline__voluntary_date_change", "scenario_directory": str(directory),
        "is_successful": False, "insufficient_agent_turns": True, "clean_exit": True, "stop_reason": "[EXIT]",
        "total_turns": len(VOICE_TURNS),
        "turns": [{"role": role, "text": text, "heard": heard, "timestamp": f"t{i}"}
                  for i, (role, text, heard, start, end) in enumerate(VOICE_TURNS)],
        "latencies": [{"user_transcript": VOICE_TURNS[1][1], "agent_transcript": VOICE_TURNS[2][1], "latency_ms": 1200.0},
                      {"user_transcript": VOICE_TURNS[3][1], "agent_transcript": VOICE_TURNS[4][1], "latency_ms": 9700.0}],
        "latency_stats": {"count": 2, "p50_ms": 9700.0, "p95_ms": 9700.0, "mean_ms": 5450.0, "min_ms": 1200.0,
                          "max_ms": 9700.0},
    }
    result = ScenarioResult.objects.create(
        run=run, scenario_name=metrics["scenario_name"], directory=str(directory), metrics=metrics,
        is_successful=False, insufficient_agent_turns=True, clean_exit=True, stop_reason="[EXIT]",
        total_turns=len(VOICE_TURNS))
    return result.pk


def make_human_call(root: str, stamp: str, *, tester: str) -> tuple[int, int]:
    """A human call as ``human_run`` stores it (source human, the form's default passenger model)."""
    run_id = make_run(root, stamp, verdicts=[True], latency_ms=900.0, tokens=300, agent="listening",
                      modality="voice", source=Run.Source.HUMAN, owner=tester)
    return run_id, ScenarioResult.objects.get(run_id=run_id).pk
