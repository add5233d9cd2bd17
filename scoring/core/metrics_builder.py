"""Building one scenario's ``metrics.json`` from what the bridge observed (harness.md §12, §14.5).

Pure: no Django, no network; the judge result is passed in already computed.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from scoring.core import signals
from scoring.core.judge import judge_passed
from scoring.core.latency import latency_stats, latency_values


def build_metrics(
    *,
    scenario_name: str,
    scenario_dir: Path,
    outcome: Any,
    scenario_duration: float,
    success_signals: list[str],
    policy: str,
    inactivity_timeout: float,
    min_agent_turns: int,
    expected_hash: str | None,
    actual_hash: str | None,
    is_action_match: bool | str,
    judge: dict[str, Any] | None,
    judge_threshold: float | None,
    auto_retry_count: int,
    auto_retry_reasons: list[str],
    trace_metrics: Any = None,
    key_entity_accuracy: dict[str, Any] | None = None,
    trial: int | None = None,
    db_hash_disagreement: dict[str, str] | None = None,
    condition: str | None = None,
    turn_taking: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The metrics dict in the recommended key order; readers never depend on the order.

    ``db_hash_disagreement`` (``{"reported", "computed"}``): a protocol agent's reported hash
    that its own final DB does not hash to; recorded, and ``db_state_match`` is then false.
    ``condition`` (a ``--conditions`` run) and ``turn_taking`` (voice) are project keys added
    after the harness's; the seed's keys are untouched."""
    latencies = list(outcome.latencies)
    metrics: dict[str, Any] = {
        "scenario_name": scenario_name,
        "scenario_directory": str(scenario_dir),
        "total_turns": len(outcome.turns),
        "turns": list(outcome.turns),
        "duration_seconds": round(float(outcome.duration_seconds), 3),
        "scenario_duration": round(float(scenario_duration), 3),
        "latency_stats": latency_stats(latency_values(latencies)),
        "latencies": latencies,
        "stop_reason": outcome.stop_reason,
        "inactivity_timeout_seconds": float(inactivity_timeout),
    }
    clean_exit, end_reason = signals.end_verdict(
        policy,
        end_conversation_tool_called=outcome.end_conversation_tool_called,
        simulator_end_reported=outcome.simulator_end_reported,
        stop_reason=outcome.stop_reason,
        last_speaker=outcome.last_speaker,
    )
    metrics.update(
        {
            "clean_exit": clean_exit,
            "end_conversation_tool_called": bool(outcome.end_conversation_tool_called),
            "simulator_end_reported": bool(outcome.simulator_end_reported),
            "last_speaker": outcome.last_speaker,
            "conversation_end_policy": policy,
            "conversation_end_reason": end_reason,
        }
    )
    metrics["token_usage"] = outcome.token_usage
    count = signals.agent_turn_count(metrics, scenario_dir)
    insufficient = signals.is_stalled(count, min_agent_turns)
    if insufficient:
        metrics["insufficient_agent_turns"] = True
    metrics["is_action_match"] = is_action_match
    if judge is not None:
        metrics["judge_score"] = judge["score"]
        passed = judge_passed(judge["score"], judge_threshold)
        if passed is not None:
            metrics["judge_passed"] = passed
        if "nl_assertion_pass_rate" in judge:
            metrics["nl_assertion_pass_rate"] = judge["nl_assertion_pass_rate"]
    # token_usage sits after the signals in the recommended order.
    metrics["token_usage"] = metrics.pop("token_usage")
    if expected_hash is not None:
        metrics["db_state_expected_hash"] = expected_hash
        metrics["db_state_actual_hash"] = actual_hash
        metrics["db_state_match"] = (
            actual_hash is not None and actual_hash == expected_hash and db_hash_disagreement is None
        )
        if db_hash_disagreement is not None:
            metrics["db_hash_disagreement"] = dict(db_hash_disagreement)
    metrics.update(
        signals.composite_fields(
            signals.signal_verdicts(metrics), success_signals, insufficient_agent_turns=insufficient
        )
    )
    metrics["auto_retry_count"] = auto_retry_count
    if auto_retry_count >= 1:
        metrics["auto_retry_reasons"] = list(auto_retry_reasons)
    if trace_metrics is not None:
        metrics["trace_metrics"] = trace_metrics
    if key_entity_accuracy is not None:
        metrics["key_entity_accuracy"] = key_entity_accuracy
    if trial is not None:
        metrics["trial"] = trial
    if condition:
        metrics["condition"] = condition
    if turn_taking is not None:
        metrics["turn_taking"] = turn_taking
    return metrics
