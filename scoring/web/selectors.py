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
from scenarios.registry import get_eval_scenario, get_eval_scenario_class
from scoring.core.db_diff import gold_diff
from scoring.models import Run, ScenarioResult
from scoring.runs.options import REDACTED
from scoring.core.signals import SIGNAL_NAMES

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


# --- live and interactive pages (issue 7) --------------------------------------------------------


def run_queue_dir_names(run: Run) -> list[str]:
    """The scenario directory names of the run's queue (``name`` or ``name__trialK``)."""
    names = run.scenario_names or []
    if run.trials <= 1:
        return list(names)
    return [f"{name}__trial{trial}" for name in names for trial in range(1, run.trials + 1)]


def _result_dir_name(result: ScenarioResult, trials: int) -> str:
    return result.scenario_name if trials <= 1 else f"{result.scenario_name}__trial{result.trial}"


def run_in_flight(run: Run) -> list[str]:
    """Queued scenarios of a running run that have started (their directory exists) but have no
    ``metrics.json`` yet, in queue order."""
    if run.status != Run.Status.RUNNING:
        return []
    done = {_result_dir_name(r, run.trials) for r in run.results.only("scenario_name", "trial")}
    session = Path(run.session_dir)
    return [name for name in run_queue_dir_names(run)
            if name not in done and (session / name).is_dir() and not (session / name / "metrics.json").exists()]


def run_snapshot(run_id: int) -> dict[str, Any] | None:
    """The run's state as a live watcher first sees it (counts, finished verdicts, in-flight
    scenarios); None for an unknown run."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return None
    results = run.results.only("scenario_name", "trial", "is_successful", "stop_reason")
    return {
        "run": str(run),
        "status": run.status,
        "modality": run.modality,
        "total": run.total_scenarios,
        "completed": run.completed_scenarios,
        "successful": run.successful_scenarios,
        "finished": [{"name": _result_dir_name(r, run.trials), "is_successful": r.is_successful,
                      "stop_reason": r.stop_reason} for r in results],
        "running": run_in_flight(run),
    }


def run_failing_count(run: Run) -> int:
    """Finished results that failed (the live page's "failing" count)."""
    return run.results.filter(is_successful=False).count()


def run_review_counts(run: Run) -> dict[str, int]:
    """Reviewed results and their verdicts, for the run page."""
    results = run.results.all()
    return {
        "reviewed": results.filter(reviewed=True).count(),
        "agrees": results.filter(reviewed=True, review_verdict=ScenarioResult.ReviewVerdict.AGREES).count(),
        "disagrees": results.filter(reviewed=True, review_verdict=ScenarioResult.ReviewVerdict.DISAGREES).count(),
        "total": results.count(),
    }


def _eva_id_of(name: str) -> str:
    cls = get_eval_scenario_class(name)
    return getattr(cls, "eva_id", "") if cls is not None else ""


def run_charts(run: Run) -> dict[str, Any]:
    """The run page's figures: pass/fail per scenario group and the pooled latency histogram."""
    from scoring.core.latency import latency_values
    from scoring.web.charts import group_bars, latency_histogram, scenario_group

    outcomes, latencies = [], []
    for name, success, metrics in run.results.values_list("scenario_name", "is_successful", "metrics"):
        outcomes.append((scenario_group(_eva_id_of(name)), success))
        latencies += latency_values((metrics or {}).get("latencies"))
    return {"groups": group_bars(outcomes), "histogram": latency_histogram(latencies)}


# Sections of all_summary.txt whose indented lines are run-level figures (the per-scenario
# blocks are not: the results table shows those).
_FIGURE_SECTIONS = ("Overall Latency Statistics", "Per-signal pass rates", "Token Usage", "evasite")


def summary_figures(run: Run) -> list[tuple[str, str]]:
    """The run-level ``name: value`` lines of ``all_summary.txt``, in file order."""
    figures: list[tuple[str, str]] = []
    section = ""
    for line in (run.summary_text or "").splitlines():
        if not line.strip() or set(line.strip()) <= {"=", "-"}:
            continue
        indented = line.startswith(" ")
        name, sep, value = line.strip().partition(":")
        if not indented and (not value.strip() or line.startswith("=")):
            section = name.strip("= ")
            continue
        if sep and value.strip() and (not indented or section in _FIGURE_SECTIONS):
            figures.append((name.strip(), value.strip()))
    return figures


def _read_artifact_json(result: ScenarioResult, name: str) -> Any:
    path = result_artifact_path(result, name)
    if path is None:
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _segment_starts(result: ScenarioResult, turns: list[dict[str, Any]]) -> list[float | None]:
    """Seconds into ``conversation_log.wav`` where each turn starts (seglst order = turn order)."""
    segments = _read_artifact_json(result, "conversation_log.seglst.json")
    if not isinstance(segments, list) or len(segments) != len(turns):
        return []
    return [s.get("start_time") if isinstance(s, dict) and isinstance(s.get("start_time"), (int, float)) else None
            for s in segments]


def _scenario_entities(result: ScenarioResult) -> list[str]:
    from voice.entities import scenario_entities

    try:
        scenario = get_eval_scenario(result.scenario_name)
        if scenario is None:
            return []
        db = scenario.fresh_db() if hasattr(scenario, "fresh_db") else {}
    except Exception:  # a scenario whose data is missing still gets a page
        return []
    return scenario_entities(db, getattr(scenario, "information_required", {}) or {})


def result_timeline(result: ScenarioResult) -> dict[str, Any]:
    """Turns interleaved with tool calls and actions, seek offsets, misheard key entities."""
    from voice.entities import entity_in

    from scoring.web.timeline import build_timeline, final_actions

    turns = [t for t in (result.metrics or {}).get("turns", []) if isinstance(t, dict)]
    context = _read_artifact_json(result, "bot_logs_agent/llm_context.json")
    items, unmatched = build_timeline(turns, context if isinstance(context, list) else [],
                                      final_actions(_read_artifact_json(result, "final_agent_response.json")),
                                      _segment_starts(result, turns))
    if any(getattr(item, "heard", None) is not None for item in items):
        entities = _scenario_entities(result)
        for item in items:
            if getattr(item, "kind", "") == "turn" and item.heard is not None:
                item.misheard = [e for e in entities if entity_in(e, item.text) and not entity_in(e, item.heard)]
    return {"items": items, "unmatched_actions": unmatched,
            "has_tool_calls": any(getattr(item, "kind", "") == "tool" for item in items)}


def result_token_rows(result: ScenarioResult) -> list[dict[str, Any]]:
    """Token usage per side with where the figures come from: ``server`` (reported by the
    endpoint), ``estimate`` or ``unknown`` when the metrics say so (older metrics say nothing)."""
    rows = []
    for side, usage in (result.token_usage or {}).items():
        if not isinstance(usage, dict):
            continue
        source = usage.get("source") or usage.get("token_source") or ""
        rows.append({"side": side, "n_calls": usage.get("n_calls"), "prompt": usage.get("prompt"),
                     "completion": usage.get("completion"), "source": source})
    return rows


def compare_runs(a: Run, b: Run) -> list[Any]:
    """Rows of the compare page (flips first)."""
    from scoring.web.compare import ResultSummary, compare_rows

    def summaries(run: Run) -> dict[tuple[str, int], ResultSummary]:
        out = {}
        for r in run_results(run):
            p50 = ((r.metrics or {}).get("latency_stats") or {}).get("p50_ms")
            out[(r.scenario_name, r.trial)] = ResultSummary(r.pk, r.is_successful, r.stop_reason, r.total_turns,
                                                            p50 if (r.metrics or {}).get("latencies") else None)
        return out

    left, right = summaries(a), summaries(b)
    return compare_rows(left, right, [*left.keys(), *right.keys()])
