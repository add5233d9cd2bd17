"""Runs with known verdicts per scenario and trial, written the way the runner writes them (the
``scoring.services`` row functions, metrics shaped like ``metrics.json`` with the file beside
them), for the gate's page tests and, through ``LiveSite.python``, a live site."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model

from scoring import services
from scoring.core.files import write_json
from scoring.models import Run


def attempt_metrics(name: str, trial: int, trials: int, passed: bool, scenario_dir: Path) -> dict[str, Any]:
    """One attempt's metrics: its verdict, its signals and three agent responses (not a stall)."""
    metrics: dict[str, Any] = {
        "scenario_name": name, "scenario_directory": str(scenario_dir), "is_successful": passed,
        "db_state_match": passed, "clean_exit": True, "stop_reason": "[EXIT]", "total_turns": 6,
        "success_breakdown": {"passed": ["clean_exit"] + (["db_state_match"] if passed else []),
                              "failed": [] if passed else ["db_state_match"], "not_applicable": [], "excluded": []},
        "token_usage": {"agent": {"n_calls": 3, "prompt": 300, "completion": 60, "source": "estimate"}},
        "latencies": [{"user_transcript": "hello", "agent_transcript": "hi", "latency_ms": 800.0}],
        "scenario_duration": 2.0,
    }
    if trials > 1:
        metrics["trial"] = trial
    return metrics


def record_run(root: str, stamp: str, verdicts: dict[str, list[bool]], *, owner: str | None = None,
               source: str = Run.Source.CLI, status: str = Run.Status.FINISHED, agent: str = "gold-replay") -> int:
    """A run of ``verdicts`` (scenario → each trial's verdict); ``status`` running leaves it open."""
    trials = max(len(outcomes) for outcomes in verdicts.values())
    session = Path(root) / f"eval_{stamp}"
    owner_id = get_user_model().objects.get(username=owner).pk if owner else None
    run = services.run_open(
        session_dir=session, timestamp=stamp, source=source, owner_id=owner_id, scenario_names=list(verdicts),
        total_scenarios=len(verdicts) * trials,
        parsed_args={"modality": "text", "agent_model": agent, "user_model": "scripted", "trials": trials,
                     "min_agent_turns": 3, "scenarios": list(verdicts)})
    for position, (name, outcomes) in enumerate(verdicts.items()):
        for trial, passed in enumerate(outcomes, start=1):
            scenario_dir = session / (name if trials == 1 else f"{name}__trial{trial}")
            scenario_dir.mkdir(parents=True, exist_ok=True)
            metrics = attempt_metrics(name, trial, trials, passed, scenario_dir)
            write_json(scenario_dir / "metrics.json", metrics)
            services.scenario_result_record(run_id=run.pk, metrics=metrics, position=position, trial=trial,
                                            final_db=None)
    if status != Run.Status.RUNNING:
        passes = sum(sum(outcomes) for outcomes in verdicts.values())
        attempts = sum(len(outcomes) for outcomes in verdicts.values())
        services.run_close(run_id=run.pk, status=status, success_rate=passes / attempts)
    return run.pk


def fail_attempt(run_id: int, scenario_name: str, trial: int) -> None:
    """Turn one recorded attempt of a real run into a failure, in its row and its metrics.json, the
    way re-scoring writes both: a flaky scenario without mocking anything that reads it."""
    result = Run.objects.get(pk=run_id).results.get(scenario_name=scenario_name, trial=trial)
    metrics = {**result.metrics, "is_successful": False, "db_state_match": False}
    services.scenario_result_record(run_id=run_id, metrics=metrics, position=result.position, trial=trial,
                                    final_db=result.final_db)
    metrics_file = Path(result.directory) / "metrics.json"
    if metrics_file.is_file():
        write_json(metrics_file, metrics)
