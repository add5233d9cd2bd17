"""Reads of stored runs and results for the results pages (harness.md §20).

Views only call these; anything a page needs that is more than a field lookup (which flags may be
shown, which artifact files exist, the diff against the gold database) is decided here so the
views stay thin and the rules have one home.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db.models import F, QuerySet

from scenarios import data_root
from scenarios.models import Scenario
from scenarios.registry import get_eval_scenario_class
from scoring.db_diff import gold_diff
from scoring.models import Run, ScenarioResult
from scoring.run_options import REDACTED
from scoring.signals import SIGNAL_NAMES

# Files a result page may link to and the artifact endpoint may serve (harness.md §14.2). Anything
# else in the scenario directory (prompts, hashes, killed attempts) stays off the web.
ARTIFACT_NAMES: tuple[str, ...] = (
    "conversation_log.txt",
    "conversation_log.wav",
    "conversation_log.seglst.json",
    "metrics.json",
    "final_agent_response.json",
    "bot_logs_agent/llm_context.json",
    "bot_logs_user/llm_context.json",
    "bridge_log.txt",
)

# parsed_args keys containing these words hold credentials (run_args.json redacts judge_api_key,
# but a future flag might not be redacted at the source).
_SENSITIVE_KEY_WORDS: tuple[str, ...] = ("key", "secret")
_BREAKDOWN_BUCKETS: tuple[str, ...] = ("passed", "failed", "not_applicable", "excluded")
# metrics.json fields a result page lists as its verdicts (§14.5), in reading order; a field the
# scenario did not write (key absent = signal does not apply, §11.5) is simply not shown.
_VERDICT_FIELDS: tuple[str, ...] = (
    "is_successful",
    "is_task_successful",
    "is_action_match",
    "db_state_match",
    "db_state_assertion_pass_rate",
    "nl_assertion_pass_rate",
    "judge_score",
    "judge_passed",
    "clean_exit",
    "insufficient_agent_turns",
    "conversation_end_policy",
    "conversation_end_reason",
    "end_conversation_tool_called",
    "simulator_end_reported",
    "last_speaker",
    "stop_reason",
    "auto_retry_count",
    "auto_retry_reasons",
)


# --- runs --------------------------------------------------------------------------------------


def _with_percent(queryset: QuerySet[Run]) -> QuerySet[Run]:
    # success_rate is stored as a fraction; pages show percent like all_summary.txt does.
    return queryset.annotate(success_pct=F("success_rate") * 100)


def run_list() -> QuerySet[Run]:
    """Every run, newest first, with ``success_pct`` for display."""
    return _with_percent(Run.objects.all()).order_by("-started_at", "-pk")


def run_get(pk: int) -> Run | None:
    """One run (with ``success_pct``), or None."""
    return _with_percent(Run.objects.filter(pk=pk)).first()


def run_results(run: Run) -> QuerySet[ScenarioResult]:
    """The run's results in queue order, then trial."""
    return run.results.order_by("position", "trial", "pk")


def run_flags(run: Run) -> list[tuple[str, str]]:
    """The invocation flags safe to show, as ``(name, display value)`` in stored order.

    A flag whose name mentions a key or secret is left out unless it is already redacted or empty;
    nested dicts are scrubbed the same way so a credential cannot hide one level down.
    """
    flags: list[tuple[str, str]] = []
    for name, value in (run.parsed_args or {}).items():
        if _is_sensitive(name, value):
            continue
        flags.append((str(name), _display_value(_scrub(value))))
    return flags


def _is_sensitive(name: Any, value: Any) -> bool:
    lowered = str(name).lower()
    if not any(word in lowered for word in _SENSITIVE_KEY_WORDS):
        return False
    return value not in (None, "", REDACTED)


def _scrub(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _scrub(item) for key, item in value.items() if not _is_sensitive(key, item)}
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    return value


def _display_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def run_signal_counts(run: Run) -> list[dict[str, Any]]:
    """Per signal (§11.1 order), how many results put it in each ``success_breakdown`` bucket.

    Signals no result mentions are left out, so the table shows only what this run measured.
    """
    counts = {name: dict.fromkeys(_BREAKDOWN_BUCKETS, 0) for name in SIGNAL_NAMES}
    for metrics in run.results.values_list("metrics", flat=True):
        breakdown = (metrics or {}).get("success_breakdown") or {}
        for bucket in _BREAKDOWN_BUCKETS:
            for name in breakdown.get(bucket) or []:
                if name in counts:
                    counts[name][bucket] += 1
    return [{"signal": name, **buckets} for name, buckets in counts.items() if any(buckets.values())]


# --- one scenario result -------------------------------------------------------------------------


def scenario_result_get(pk: int) -> ScenarioResult | None:
    """One result with its run, or None."""
    return ScenarioResult.objects.select_related("run").filter(pk=pk).first()


def result_verdicts(result: ScenarioResult) -> list[tuple[str, Any]]:
    """``(field, value)`` for the verdict fields the result's metrics carry."""
    metrics = result.metrics or {}
    return [(name, metrics[name]) for name in _VERDICT_FIELDS if name in metrics]


def result_eva_id(result: ScenarioResult) -> str | None:
    """The dataset id behind the result's scenario: the registry first (the source of truth), the
    mirror as a fallback for a scenario that has since left the registry."""
    cls = get_eval_scenario_class(result.scenario_name)
    eva_id = getattr(cls, "eva_id", "") if cls is not None else ""
    if not eva_id:
        eva_id = Scenario.objects.filter(name=result.scenario_name).values_list("eva_id", flat=True).first() or ""
    return eva_id or None


def result_db_diff(result: ScenarioResult) -> dict[str, Any] | None:
    """Structured diff of the gold database against the agent's final one (tools.md §6.2).

    None when no final database is stored, or when the gold database cannot be found (unknown
    scenario, missing data root): the page then says so instead of failing.
    """
    actual = result.final_db
    if actual is None:
        return None
    eva_id = result_eva_id(result)
    if eva_id is None:
        return None
    try:
        expected = data_root.expected_db(eva_id)
    except (KeyError, data_root.DataRootError):
        return None
    return gold_diff(expected, actual)


@dataclass
class DiffNode:
    """One line of a diff outline; the page renders nodes as nested lists."""

    label: str
    expected: str | None = None
    actual: str | None = None
    children: list[DiffNode] = field(default_factory=list)


def diff_outline(diff: dict[str, Any]) -> list[DiffNode]:
    """Turn ``db_diff`` output into a uniform tree so one recursive template can draw any depth."""
    nodes = [DiffNode(f"table added: {name}") for name in diff.get("tables_added", [])]
    nodes += [DiffNode(f"table removed: {name}") for name in diff.get("tables_removed", [])]
    for table, table_diff in diff.get("tables_modified", {}).items():
        nodes.append(DiffNode(f"table {table}", children=_table_nodes(table_diff)))
    return nodes


def _table_nodes(table_diff: dict[str, Any]) -> list[DiffNode]:
    if table_diff.get("type") == "non_dict_table":
        return [_mismatch_node("value", table_diff)]
    nodes = [DiffNode(f"record added: {key}") for key in table_diff.get("records_added", [])]
    nodes += [DiffNode(f"record removed: {key}") for key in table_diff.get("records_removed", [])]
    for key, record_diff in table_diff.get("records_modified", {}).items():
        nodes.append(DiffNode(f"record {key}", children=_value_nodes(record_diff)))
    return nodes


def _value_nodes(diff: dict[str, Any]) -> list[DiffNode]:
    kind = diff.get("type")
    if kind == "list_differences":
        return [DiffNode(f"[{item['index']}]", children=_value_nodes(item["diff"])) for item in diff["differences"]]
    if kind == "list_length_mismatch":
        label = f"list length {diff['expected_length']} expected, {diff['actual_length']} actual"
        return [_mismatch_node(label, diff)]
    if kind == "type_mismatch":
        return [_mismatch_node(f"type {diff['expected_type']} expected, {diff['actual_type']} actual", diff)]
    if kind is not None:
        return [_mismatch_node("value", diff)]
    nodes = [DiffNode(f"field added: {name}") for name in diff.get("fields_added", [])]
    nodes += [DiffNode(f"field removed: {name}") for name in diff.get("fields_removed", [])]
    for name, sub in diff.get("fields_modified", {}).items():
        kind = sub.get("type")
        if kind is not None and kind != "list_differences":
            # A leaf mismatch reads better on the field's own line than one level down.
            leaf = _value_nodes(sub)[0]
            suffix = "" if leaf.label == "value" else f" ({leaf.label})"
            nodes.append(DiffNode(f"{name}{suffix}", leaf.expected, leaf.actual))
        else:
            nodes.append(DiffNode(name, children=_value_nodes(sub)))
    return nodes


def _mismatch_node(label: str, diff: dict[str, Any]) -> DiffNode:
    return DiffNode(label, _compact(diff.get("expected")), _compact(diff.get("actual")))


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# --- artifacts -----------------------------------------------------------------------------------


def result_artifact_path(result: ScenarioResult, name: str) -> Path | None:
    """The file ``name`` of the result's directory when it is allow-listed and exists, else None.

    Only the exact allow-listed names are accepted, and the resolved path must still sit inside
    the resolved directory, so neither ``..`` nor a planted symlink can reach another file.
    """
    if name not in ARTIFACT_NAMES or not result.directory:
        return None
    directory = Path(result.directory).resolve()
    candidate = (directory / name).resolve()
    if not candidate.is_relative_to(directory) or not candidate.is_file():
        return None
    return candidate


def result_artifacts(result: ScenarioResult) -> list[str]:
    """Allow-listed artifact names present for this result, in allow-list order."""
    return [name for name in ARTIFACT_NAMES if result_artifact_path(result, name) is not None]


def run_snapshot(run_id: int) -> dict[str, Any] | None:
    """The run's state as a live watcher first sees it; None for an unknown run."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return None
    return {
        "run": str(run),
        "status": run.status,
        "total": run.total_scenarios,
        "completed": run.completed_scenarios,
        "successful": run.successful_scenarios,
    }
