"""Run-level aggregation (§15.1-§15.3).

One aggregator is fed identically by live scenarios and by ``metrics.json`` files loaded on resume,
so ``all_summary.txt`` does not depend on how a scenario got into the run. Fields that are absent or
ill-typed in an older ``metrics.json`` simply contribute nothing.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scoring.core.attempt_names import (
    attempt_name,
    comparable_name,
    has_trial_suffix,
    recorded_condition,
    scenario_of,
)
from scoring.core.latency import latency_values, overall_latency_stats
from scoring.core.signals import SIGNAL_CLEAN_EXIT, agent_turn_count, is_stalled
from scoring.core.values import is_int, is_number

# Ratio buckets, in the order the summary prints them.
SUCCESS = "success"
TASK_SUCCESS = "task_success"
ACTION_MATCH = "action_match"
DB_STATE = "db_state"
DB_STATE_ASSERTION = "db_state_assertion"
NL_ASSERTION = "nl_assertion"
JUDGE_PASSED = "judge_passed"
CLEAN_EXIT = "clean_exit"
BUCKETS: tuple[str, ...] = (
    SUCCESS,
    TASK_SUCCESS,
    ACTION_MATCH,
    DB_STATE,
    DB_STATE_ASSERTION,
    NL_ASSERTION,
    JUDGE_PASSED,
    CLEAN_EXIT,
)
TOKEN_SIDES = ("agent", "user")
TOKEN_FIELDS = ("n_calls", "prompt", "completion")
KEY_ENTITY_DIRECTIONS = ("user_to_agent", "agent_to_user")


@dataclass
class Bucket:
    """Pass/fail outcomes; ``rate`` is None when empty so the summary can omit it."""

    outcomes: list[bool] = field(default_factory=list)

    @property
    def passes(self) -> int:
        return sum(self.outcomes)

    @property
    def total(self) -> int:
        return len(self.outcomes)

    @property
    def rate(self) -> float | None:
        return self.passes / self.total if self.outcomes else None


def scenario_label(metrics: Mapping[str, Any]) -> str:
    """How a scenario attempt is named in the run files: its directory's name, i.e. with
    ``__cond-<name>`` under ``--conditions`` and ``__trial<k>`` with ``--trials``, so attempts
    are told apart."""
    name = str(metrics.get("scenario_name", ""))
    trial = metrics.get("trial")
    if has_trial_suffix(name):
        return name
    # A recorded trial means the run had several.
    return attempt_name(name, trial if is_int(trial) else None, 2 if is_int(trial) else 1, recorded_condition(metrics))


def domain_of(scenario_name: str) -> str:
    """Domain bucket: the name before the first ``__`` (the whole name if none)."""
    return scenario_name.split("__", 1)[0]


class RunAggregator:
    """Buckets, token totals, stalled names and pooled latencies of one run."""

    def __init__(self, min_agent_turns: int) -> None:
        self.min_agent_turns = min_agent_turns
        self.scenarios: list[dict[str, Any]] = []  # queue order, for the per-scenario blocks
        self.buckets: dict[str, Bucket] = {name: Bucket() for name in BUCKETS}
        self.domain_buckets: dict[str, dict[str, Bucket]] = {name: {} for name in BUCKETS}
        self.judge_scores: list[float] = []
        self.domain_judge_scores: dict[str, list[float]] = {}
        self.tokens: dict[str, dict[str, int]] = {side: dict.fromkeys(TOKEN_FIELDS, 0) for side in TOKEN_SIDES}
        self.token_sources: dict[str, set[str]] = {side: set() for side in TOKEN_SIDES}
        """Per side, the ``source`` labels of the scenarios' token counts (server, estimate, ...)."""
        self.calls_without_usage: dict[str, int] = dict.fromkeys(TOKEN_SIDES, 0)
        self.stalled: list[str] = []
        self.latencies: list[float] = []
        self.key_entities: dict[str, dict[str, int]] = {}
        self.trial_outcomes: dict[str, list[bool]] = {}

    # --- feeding ------------------------------------------------------------------------------

    def add(self, metrics: Mapping[str, Any], scenario_dir: Path | None = None) -> None:
        """Fold one scenario in. ``scenario_dir`` (default: the metrics' ``scenario_directory``)
        is where the agent context and ``judge_result.json`` are read back from."""
        if scenario_dir is None and isinstance(metrics.get("scenario_directory"), str):
            scenario_dir = Path(metrics["scenario_directory"])
        name = str(metrics.get("scenario_name", ""))
        domain = domain_of(name)
        self.scenarios.append(dict(metrics))
        self.latencies.extend(latency_values(metrics.get("latencies")))
        self._add_tokens(metrics.get("token_usage"))
        self._add_key_entities(metrics.get("key_entity_accuracy"))

        if is_stalled(agent_turn_count(metrics, scenario_dir), self.min_agent_turns):
            # Counted as a failure, never as per-signal evidence (§10.2).
            self._append(SUCCESS, domain, False)
            self._append(TASK_SUCCESS, domain, False)
            self._add_trial(metrics, False)
            self.stalled.append(scenario_label(metrics))
            return

        if isinstance(metrics.get("is_action_match"), bool):
            self._append(ACTION_MATCH, domain, metrics["is_action_match"])
        if is_number(metrics.get("judge_score")):
            self.judge_scores.append(float(metrics["judge_score"]))
            self.domain_judge_scores.setdefault(domain, []).append(float(metrics["judge_score"]))
        if isinstance(metrics.get("judge_passed"), bool):
            self._append(JUDGE_PASSED, domain, metrics["judge_passed"])
        if isinstance(metrics.get("db_state_match"), bool):
            self._append(DB_STATE, domain, metrics["db_state_match"])
        if isinstance(metrics.get("clean_exit"), bool):
            self._append(CLEAN_EXIT, domain, metrics["clean_exit"])
        if "nl_assertion_pass_rate" in metrics and scenario_dir is not None:
            for passed in read_nl_verdicts(Path(scenario_dir)):
                self._append(NL_ASSERTION, domain, passed)
        verdicts = metrics.get("db_state_assertion_verdicts")
        if isinstance(verdicts, list):
            for verdict in verdicts:
                self._append(DB_STATE_ASSERTION, domain, isinstance(verdict, Mapping) and verdict.get("passed") is True)
        success = metrics.get("is_successful")
        if isinstance(success, bool):
            self._append(SUCCESS, domain, success)
            task = _task_success(metrics)
            if task is not None:
                self._append(TASK_SUCCESS, domain, task)
            self._add_trial(metrics, success)

    def _append(self, bucket: str, domain: str, outcome: bool) -> None:
        self.buckets[bucket].outcomes.append(bool(outcome))
        self.domain_buckets[bucket].setdefault(domain, Bucket()).outcomes.append(bool(outcome))

    def _add_tokens(self, usage: Any) -> None:
        if not isinstance(usage, Mapping):
            return
        for side in TOKEN_SIDES:
            counts = usage.get(side)
            if not isinstance(counts, Mapping):
                continue
            for key in TOKEN_FIELDS:
                if is_int(counts.get(key)):
                    self.tokens[side][key] += counts[key]
            source = counts.get("source")
            if isinstance(source, str) and source != "none" and is_int(counts.get("n_calls")) and counts["n_calls"] > 0:
                self.token_sources[side].add(source)
            if is_int(counts.get("calls_without_usage")):
                self.calls_without_usage[side] += counts["calls_without_usage"]

    def token_source(self, side: str) -> str | None:
        """One label for where a side's token counts came from over the run (None: not recorded)."""
        sources = self.token_sources[side]
        if not sources:
            return None
        return next(iter(sources)) if len(sources) == 1 else "mixed"

    def _add_key_entities(self, accuracy: Any) -> None:
        # Transcription accuracy measures the speech path, not the agent: stalled scenarios count too.
        if not isinstance(accuracy, Mapping):
            return
        for direction in KEY_ENTITY_DIRECTIONS:
            counts = accuracy.get(direction)
            if isinstance(counts, Mapping) and is_int(counts.get("spoken")) and is_int(counts.get("intact")):
                totals = self.key_entities.setdefault(direction, {"spoken": 0, "intact": 0})
                totals["spoken"] += counts["spoken"]
                totals["intact"] += counts["intact"]

    def _add_trial(self, metrics: Mapping[str, Any], success: bool) -> None:
        """Trials of one scenario under one condition (pass^k never mixes conditions)."""
        scenario = scenario_of(str(metrics.get("scenario_name", "")))
        self.trial_outcomes.setdefault(comparable_name(scenario, recorded_condition(metrics)), []).append(success)

    # --- reading ------------------------------------------------------------------------------

    def rate(self, bucket: str) -> float | None:
        """Pass rate of a run-level bucket, None when empty."""
        return self.buckets[bucket].rate

    def domains(self, bucket: str) -> dict[str, Bucket]:
        """Per-domain buckets sorted by domain name."""
        return dict(sorted(self.domain_buckets[bucket].items()))

    @property
    def judge_score_mean(self) -> float | None:
        return sum(self.judge_scores) / len(self.judge_scores) if self.judge_scores else None

    @property
    def total_turns(self) -> int:
        return sum(m["total_turns"] for m in self.scenarios if is_int(m.get("total_turns")))

    @property
    def total_duration(self) -> float:
        """Sum of ``scenario_duration`` in seconds."""
        return float(sum(m["scenario_duration"] for m in self.scenarios if is_number(m.get("scenario_duration"))))

    def overall_latency_stats(self) -> dict[str, Any]:
        return overall_latency_stats(self.latencies)

    def by_condition(self) -> dict[str, "RunAggregator"]:
        """One aggregator per ``--conditions`` entry, in the order the run first met them; empty
        when no attempt recorded a condition (a plain run)."""
        groups: dict[str, RunAggregator] = {}
        for metrics in self.scenarios:
            condition = recorded_condition(metrics)
            if condition:
                groups.setdefault(condition, RunAggregator(self.min_agent_turns)).add(metrics)
        return groups

    def yield_times(self) -> list[float]:
        """Every measured yield time (ms) of the run's voice attempts (``turn_taking``)."""
        values = []
        for metrics in self.scenarios:
            figures = metrics.get("turn_taking")
            interruptions = figures.get("interruptions") if isinstance(figures, Mapping) else None
            for entry in interruptions if isinstance(interruptions, list) else ():
                if isinstance(entry, Mapping) and is_number(entry.get("yield_ms")):
                    values.append(float(entry["yield_ms"]))
        return values

    def key_entity_accuracy(self) -> dict[str, dict[str, Any]] | None:
        """Run totals per direction in the ``metrics.json`` shape, or None if no scenario had any."""
        if not self.key_entities:
            return None
        return {
            direction: {**totals, "rate": totals["intact"] / totals["spoken"] if totals["spoken"] else None}
            for direction, totals in self.key_entities.items()
        }


def _task_success(metrics: Mapping[str, Any]) -> bool | None:
    breakdown = metrics.get("success_breakdown")
    failed = breakdown.get("failed") if isinstance(breakdown, Mapping) else None
    if isinstance(failed, list):
        return not [name for name in failed if name != SIGNAL_CLEAN_EXIT]
    task = metrics.get("is_task_successful")
    return task if isinstance(task, bool) else None


def read_nl_verdicts(scenario_dir: Path) -> list[bool]:
    """Per-assertion outcomes from ``judge_result.json``; empty when it is missing or unreadable."""
    try:
        result = json.loads((scenario_dir / "judge_result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    verdicts = result.get("nl_assertion_verdicts") if isinstance(result, Mapping) else None
    if not isinstance(verdicts, list):
        return []
    return [isinstance(v, Mapping) and v.get("passed") is True for v in verdicts]
