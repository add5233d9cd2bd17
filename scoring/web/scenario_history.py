"""One scenario's history: its human calls beside the simulated passenger's runs of it, so a team
sees whether its agent passes with people as it does with the simulator (a read selector)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scoring.models import Run, ScenarioResult


@dataclass(frozen=True)
class HistoryRow:
    result_id: int
    run_id: int
    started_at: Any
    tester: str
    agent: str
    modality: str
    is_successful: bool | None
    stop_reason: str
    total_turns: int
    latency_p50_ms: float | None


def agent_label(parsed_args: dict[str, Any], agent_model: str) -> str:
    """How a run's agent under test is named: its bot URL, or its model (and endpoint)."""
    if parsed_args.get("agent_url"):
        return str(parsed_args["agent_url"])
    model = agent_model or str(parsed_args.get("agent_model") or "")
    url = parsed_args.get("agent_llm_url")
    return f"{model} @ {url}" if url else model


def _latency_p50(metrics: dict[str, Any]) -> float | None:
    stats = metrics.get("latency_stats")
    if not isinstance(stats, dict) or not stats.get("count"):
        return None
    value = stats.get("p50_ms")
    return float(value) if isinstance(value, (int, float)) else None


def scenario_history(name: str, *, limit: int = 200) -> dict[str, list[HistoryRow]]:
    """``{"human": [...], "simulated": [...]}``, newest first."""
    results = (ScenarioResult.objects.filter(scenario_name=name)
               .select_related("run", "run__owner").order_by("-run__started_at", "-pk")[:limit])
    rows: dict[str, list[HistoryRow]] = {"human": [], "simulated": []}
    for result in results:
        run = result.run
        human = run.source == Run.Source.HUMAN
        rows["human" if human else "simulated"].append(HistoryRow(
            result_id=result.pk,
            run_id=run.pk,
            started_at=run.started_at,
            tester=(run.owner.get_username() if run.owner else "—") if human else (run.user_model or "—"),
            agent=agent_label(run.parsed_args or {}, run.agent_model),
            modality=run.modality,
            is_successful=result.is_successful,
            stop_reason=result.stop_reason,
            total_turns=result.total_turns,
            latency_p50_ms=_latency_p50(result.metrics or {}),
        ))
    return rows
