"""Reads of stored runs and results for the results pages (harness.md §20).

Views only call these; anything a page needs that is more than a field lookup (which flags may be
shown, which artifact files exist, the diff against the gold database) is decided here so the
views stay thin and the rules have one home.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db.models import Count, F, Q, QuerySet

from scenarios import data_root
from scenarios.models import Scenario
from scenarios.registry import get_eval_scenario, get_eval_scenario_class
from scoring.core.attempt_names import CLEAN, attempt_name, comparable_name, split_condition
from scoring.core.db_diff import gold_diff
from scoring.models import Run, ScenarioResult
from scoring.runs.options import REDACTED
from scoring.runs.options.conditions import run_conditions
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
    "speech_timeline.json",
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


def run_is_running(pk: int) -> bool:
    return Run.objects.filter(pk=pk, status=Run.Status.RUNNING).exists()


RUN_CHOICES = 500


def run_choices() -> QuerySet[Run]:
    """The newest runs for a run picker (the compare page's A and B), newest first, loading only
    what a choice shows: with 400 runs, decoding every run's flags, summary and gate took 24 of
    a compare page's 58 ms."""
    return Run.objects.only("pk", "name", "timestamp", "agent_model", "modality").order_by(
        "-started_at", "-pk")[:RUN_CHOICES]


def run_results(run: Run) -> QuerySet[ScenarioResult]:
    """The run's results in queue order, then trial."""
    return run.results.order_by("position", "trial", "pk")


@dataclass(frozen=True)
class ResultRow:
    result: ScenarioResult
    label: str  # the scenario directory's name: ``name`` or ``name__trialK``


def run_result_rows(run: Run, results: Sequence[ScenarioResult]) -> list[ResultRow]:
    """The results table of a run page (``results``: ``run_results(run)``, loaded once per page
    for every figure; decoding each result's metrics is most of a page's database cost), each
    with the name its directory has."""
    return [ResultRow(result, _result_dir_name(result, run.trials)) for result in results]


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


def run_signal_counts(results: Iterable[ScenarioResult]) -> list[dict[str, Any]]:
    """Per signal (§11.1 order), how many results put it in each ``success_breakdown`` bucket.

    Signals no result mentions are left out, so the table shows only what this run measured.
    """
    counts = {name: dict.fromkeys(_BREAKDOWN_BUCKETS, 0) for name in SIGNAL_NAMES}
    for result in results:
        breakdown = (result.metrics or {}).get("success_breakdown") or {}
        for bucket in _BREAKDOWN_BUCKETS:
            for name in breakdown.get(bucket) or []:
                if name in counts:
                    counts[name][bucket] += 1
    return [{"signal": name, **buckets} for name, buckets in counts.items() if any(buckets.values())]


# --- one scenario result -------------------------------------------------------------------------


def scenario_result_get(pk: int) -> ScenarioResult | None:
    """One result with its run, or None."""
    return ScenarioResult.objects.select_related("run").filter(pk=pk).first()


@dataclass(frozen=True)
class VerdictRow:
    name: str
    value: Any
    badge: str  # "pass", "fail", "na" or "" (a plain value)
    text: str


# Booleans that are facts rather than verdicts (yes/no, neither good nor bad), and the one whose
# True is bad news: a stalled conversation must never look like a green tick.
_FACT_FIELDS = frozenset({"end_conversation_tool_called", "simulator_end_reported"})
_BAD_WHEN_TRUE = {"insufficient_agent_turns": "yes: the stall rule fired"}


def _verdict_row(name: str, value: Any) -> VerdictRow:
    if name in _BAD_WHEN_TRUE and isinstance(value, bool):
        return VerdictRow(name, value, "fail" if value else "", _BAD_WHEN_TRUE[name] if value else "no")
    if name in _FACT_FIELDS and isinstance(value, bool):
        return VerdictRow(name, value, "", "yes" if value else "no")
    if value is True or value is False:
        return VerdictRow(name, value, "pass" if value else "fail", "pass" if value else "fail")
    if value is None or value == "N/A":
        return VerdictRow(name, value, "na", "N/A")
    if isinstance(value, list):
        return VerdictRow(name, value, "", "; ".join(str(item) for item in value) or "—")
    return VerdictRow(name, value, "", str(value))


def result_verdicts(result: ScenarioResult) -> list[VerdictRow]:
    """The verdict fields the result's metrics carry, each with how it should look."""
    metrics = result.metrics or {}
    return [_verdict_row(name, metrics[name]) for name in _VERDICT_FIELDS if name in metrics]


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


def run_conditions_of(run: Run) -> list[str]:
    """The names of the run's ``--conditions`` in order ([] for a plain run, or an old record
    that no longer parses)."""
    text = (run.parsed_args or {}).get("conditions")
    try:
        return [condition.name for condition in run_conditions(text if isinstance(text, str) else None)]
    except ValueError:
        return []


def run_queue_dir_names(run: Run) -> list[str]:
    """The scenario directory names of the run's queue (``name[__cond-C][__trialK]``)."""
    conditions = run_conditions_of(run) or [""]
    return [attempt_name(name, trial, run.trials, condition) for name in run.scenario_names or []
            for condition in conditions for trial in range(1, run.trials + 1)]


def _result_dir_name(result: ScenarioResult, trials: int) -> str:
    return attempt_name(result.scenario_name, result.trial, trials, result.condition)


def result_label(result: ScenarioResult) -> str:
    """The result's directory name (``name[__cond-C][__trialK]``), as pages name it."""
    return _result_dir_name(result, result.run.trials)


def result_condition(result: ScenarioResult) -> dict[str, Any]:
    """What the result's condition was, as its metadata.json records it ({} without one)."""
    if not result.condition or not result.directory:
        return {}
    try:
        metadata = json.loads((Path(result.directory) / "scenario_config" / "metadata.json").read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    recorded = metadata.get("condition") if isinstance(metadata, dict) else None
    return recorded if isinstance(recorded, dict) else {}


def run_in_flight(run: Run) -> list[str]:
    """Queued scenarios of a running run that have started (their directory exists) but have no
    ``metrics.json`` yet, in queue order."""
    if run.status != Run.Status.RUNNING:
        return []
    done = {_result_dir_name(r, run.trials) for r in run.results.only("scenario_name", "trial", "condition")}
    session = Path(run.session_dir)
    return [name for name in run_queue_dir_names(run)
            if name not in done and (session / name).is_dir() and not (session / name / "metrics.json").exists()]


def run_snapshot(run_id: int) -> dict[str, Any] | None:
    """The run's state as a live watcher first sees it (counts, finished verdicts, in-flight
    scenarios); None for an unknown run."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return None
    results = run.results.only("scenario_name", "trial", "condition", "is_successful", "stop_reason")
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


def run_failing_count(results: Iterable[ScenarioResult]) -> int:
    """Finished results that failed (the live page's "failing" count)."""
    return sum(1 for result in results if result.is_successful is False)


def run_review_counts(run: Run) -> dict[str, int]:
    """Reviewed results and their verdicts, for the run page (one query: the page is read far
    more often than it is reviewed)."""
    reviewed = Q(reviewed=True)
    counts = run.results.aggregate(  # aliases must not shadow the ``reviewed`` field
        n_reviewed=Count("pk", filter=reviewed),
        n_agrees=Count("pk", filter=reviewed & Q(review_verdict=ScenarioResult.ReviewVerdict.AGREES)),
        n_disagrees=Count("pk", filter=reviewed & Q(review_verdict=ScenarioResult.ReviewVerdict.DISAGREES)),
        n_total=Count("pk"),
    )
    return {name: counts[f"n_{name}"] for name in ("reviewed", "agrees", "disagrees", "total")}


def _eva_id_of(name: str) -> str:
    cls = get_eval_scenario_class(name)
    return getattr(cls, "eva_id", "") if cls is not None else ""


def run_charts(results: Iterable[ScenarioResult]) -> dict[str, Any]:
    """The run page's figures: pass/fail per scenario group and the pooled latency histogram."""
    from scenarios.registry import scenario_group
    from scoring.core.latency import latency_values
    from scoring.web.charts import group_bars, latency_histogram

    outcomes, latencies = [], []
    for result in results:
        outcomes.append((scenario_group(_eva_id_of(result.scenario_name)), result.is_successful))
        latencies += latency_values((result.metrics or {}).get("latencies"))
    return {"groups": group_bars(outcomes), "histogram": latency_histogram(latencies)}


def run_condition_figures(run: Run, results: Sequence[ScenarioResult] | None = None) -> dict[str, Any]:
    """The degradation table and chart of a ``--conditions`` run, from its stored results (so
    a running run's page shows the conditions finished so far; ``results`` when the page has
    them loaded already); empty rows for a plain run."""
    from scoring.core.condition_table import condition_table_of
    from scoring.core.gate import recorded_min_agent_turns
    from scoring.web.charts import CONDITION_LABEL_WIDTH, condition_bars

    if not run_conditions_of(run):
        return {"rows": []}
    stored = results if results is not None else run_results(run)
    metrics = [result.metrics for result in stored if isinstance(result.metrics, dict)]
    rows = condition_table_of(metrics, min_agent_turns=recorded_min_agent_turns(run.parsed_args or {}))
    bars, height = condition_bars(rows)
    return {"rows": rows, "bars": bars, "height": height, "bar_x": CONDITION_LABEL_WIDTH}


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
        if line.startswith("  Per condition:"):
            section = "Per condition"  # its rows are the conditions table, not single figures
            continue
        if section == "Per condition" and line.startswith("    "):
            continue
        if section == "Per condition":
            section = "evasite"
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


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _segments(result: ScenarioResult, turns: list[dict[str, Any]]) -> list[tuple[float | None, float | None]]:
    """``(start, end)`` seconds into ``conversation_log.wav`` of each turn (seglst order = turn order)."""
    segments = _read_artifact_json(result, "conversation_log.seglst.json")
    if not isinstance(segments, list) or len(segments) != len(turns):
        return []
    return [(_number(s.get("start_time")), _number(s.get("end_time"))) if isinstance(s, dict) else (None, None)
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
    """Turns interleaved with tool calls (and their results) and actions, each turn's place in
    the recording and the latency it answered with, misheard key entities with what they became;
    plus the recording's turn timeline and the latency strip."""
    from voice.entities import entity_in

    from scoring.web.misheard import misheard_entities
    from scoring.web.recording import latency_strip, turn_segments
    from scoring.web.timeline import build_timeline, final_actions

    metrics = result.metrics or {}
    turns = [t for t in metrics.get("turns", []) if isinstance(t, dict)]
    latencies = [e for e in metrics.get("latencies") or [] if isinstance(e, dict)]
    context = _read_artifact_json(result, "bot_logs_agent/llm_context.json")
    items, unmatched = build_timeline(turns, context if isinstance(context, list) else [],
                                      final_actions(_read_artifact_json(result, "final_agent_response.json")),
                                      _segments(result, turns), latencies)
    if any(getattr(item, "heard", None) is not None for item in items):
        entities = _scenario_entities(result)
        for item in items:
            if getattr(item, "kind", "") == "turn" and item.heard is not None:
                lost = [e for e in entities if entity_in(e, item.text) and not entity_in(e, item.heard)]
                item.misheard = misheard_entities(lost, item.text, item.heard)
    segments, length = turn_segments(item for item in items if getattr(item, "kind", "") == "turn")
    return {"items": items, "unmatched_actions": unmatched,
            "has_tool_calls": any(getattr(item, "kind", "") == "tool" for item in items),
            "segments": segments, "recording_seconds": length, "latency": latency_strip(latencies)}


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


def _result_summary(result: ScenarioResult) -> Any:
    from scoring.web.compare import ResultSummary

    metrics = result.metrics or {}
    stats = metrics.get("latency_stats") if isinstance(metrics.get("latency_stats"), dict) else {}
    measured = bool(metrics.get("latencies")) and bool(stats.get("count", 1))
    agent = (metrics.get("token_usage") or {}).get("agent") if isinstance(metrics.get("token_usage"), dict) else None
    tokens = None
    if isinstance(agent, dict):
        parts = [_number(agent.get("prompt")), _number(agent.get("completion"))]
        tokens = sum(p for p in parts if p is not None) if any(p is not None for p in parts) else None
    accuracy = (metrics.get("key_entity_accuracy") or {}) if isinstance(metrics.get("key_entity_accuracy"), dict) else {}
    heard = next((row for direction, row in accuracy.items() if str(direction).startswith("user")), None)
    return ResultSummary(result.pk, result.is_successful, result.stop_reason, result.total_turns,
                         _number(stats.get("p50_ms")) if measured else None,
                         _number(stats.get("p95_ms")) if measured else None,
                         tokens, _number(heard.get("rate")) if isinstance(heard, dict) else None)


def compare_runs(a: Run, b: Run) -> Any:
    """The compare page's rows and deltas (``scoring.web.compare.Comparison``)."""
    from scoring.web.compare import compare_runs as compare

    def summaries(run: Run) -> dict[tuple[str, int], Any]:
        return {(comparable_name(r.scenario_name, r.condition), r.trial): _result_summary(r) for r in run_results(run)}

    return compare(summaries(a), summaries(b))


def compare_transcripts(a: Run, b: Run, scenario: str, trial: int) -> dict[str, Any] | None:
    """The same scenario (and trial, and condition: ``scenario`` is the compare page's row name)
    from both runs, for side-by-side reading; None when neither run has it."""
    name, condition = split_condition(scenario)
    conditions = [condition] if condition else ["", CLEAN]  # a clean attempt pairs with a plain one
    sides = {}
    for side, run in (("a", a), ("b", b)):
        result = run.results.filter(scenario_name=name, trial=trial, condition__in=conditions).first()
        sides[side] = {"result": result, "timeline": result_timeline(result) if result is not None else None}
    if sides["a"]["result"] is None and sides["b"]["result"] is None:
        return None
    return {"scenario": scenario, "trial": trial, **sides}
