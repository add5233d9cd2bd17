"""``all_summary.txt`` (§15.4), byte for byte, plus the project's ``evasite:`` block.

Tools parse the upstream layout, so every space and blank line below is deliberate; the project
block comes strictly after it.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scoring.core import aggregate as agg
from scoring.core.aggregate import RunAggregator
from scoring.core.condition_table import condition_table
from scoring.core.latency import latency_stats, latency_values
from scoring.core.stats import flaky_scenarios, pass_hat_k, wilson_interval
from scoring.core.values import is_number

RULE_EQ = "=" * 80
RULE_DASH = "-" * 80
STALL_LINE = "  [COUNTED AS FAILURE: insufficient agent turns / stalled — excluded from per-signal rates]"
LABEL_WIDTH = 29  # the per-signal label column, "Judge passed (>= threshold): " being the widest

TOKEN_SOURCE_LABELS = {
    "server": "as reported by the server",
    "estimate": "estimates (built-in model)",
    "unknown": "unknown",
    "mixed": "partly reported, partly estimated or unknown",
}
LATENCY_LABELS = (("Mean", "mean_ms"), ("P50", "p50_ms"), ("P95", "p95_ms"), ("Min", "min_ms"), ("Max", "max_ms"))

# Per-domain blocks in print order: (bucket, heading).
DOMAIN_BLOCKS: tuple[tuple[str, str], ...] = (
    (agg.SUCCESS, "Per-Domain Success Rate:"),
    (agg.TASK_SUCCESS, "Per-Domain Task Success Rate (excl. clean_exit):"),
    (agg.DB_STATE, "Per-Domain DB-State Match Rate:"),
    (agg.NL_ASSERTION, "Per-Domain NL-Assertion Pass Rate:"),
    (agg.DB_STATE_ASSERTION, "Per-Domain DB-State-Assertion Pass Rate:"),
)


@dataclass
class ProjectBlock:
    """Inputs of the ``evasite:`` block that the aggregator cannot know by itself."""

    trials: int = 1
    pass_hat_k: dict[int, float] | None = None  # None with trials > 1: computed from the run
    null_agent_floor: tuple[int, int] | None = None  # (scenarios whose gold == initial, selected)
    key_entity_accuracy: dict[str, Any] | None = None  # None: the run's totals, if any


def format_all_summary(
    results: RunAggregator | Iterable[Mapping[str, Any]],
    *,
    min_agent_turns: int,
    project_block: ProjectBlock | None = None,
) -> str:
    """The whole file. ``results`` is a fed aggregator or the metrics dicts in queue order."""
    if isinstance(results, RunAggregator):
        if results.min_agent_turns != min_agent_turns:
            raise ValueError("aggregator was built with a different min_agent_turns")
        run = results
    else:
        run = RunAggregator(min_agent_turns)
        for metrics in results:
            run.add(metrics)
    lines = _header(run)
    for metrics in run.scenarios:
        lines += [""] + _scenario_block(metrics)
    lines += ["", ""] + _overall_latency(run)
    if run.stalled:
        lines += ["", ""] + _stall_warning(run, min_agent_turns)
    lines += ["", ""] + _success_rates(run)
    lines += ["", "Per-signal pass rates:"] + _signal_rates(run)
    lines += _token_usage(run)
    lines += _per_domain(run)
    if project_block is not None:
        lines += [""] + _project_block(run, project_block)
    return "\n".join(lines) + "\n"


def _pct(rate: float) -> str:
    return f"{rate * 100:.2f}%"



def _times_100(value: Any) -> Any:
    return value * 100 if is_number(value) else value


def _num(value: Any, spec: str) -> str:
    # An ill-typed field in an old metrics.json is printed as is rather than crashing the summary.
    if is_number(value):
        return format(value, spec)
    return str(value)


def _header(run: RunAggregator) -> list[str]:
    return [
        "EVALUATION SUMMARY",
        RULE_EQ,
        "",
        f"Total Scenarios: {len(run.scenarios)}",
        f"Total Duration: {run.total_duration / 60:.1f}mins",
        f"Total Turns: {run.total_turns}",
        "",
        "Per-Scenario Results:",
        RULE_DASH,
    ]


def _scenario_block(m: Mapping[str, Any]) -> list[str]:
    lines = [f"====== {agg.scenario_label(m)} ======:", f"  Is successful: {m.get('is_successful', 'N/A')}"]
    if "is_task_successful" in m:
        lines.append(f"  Is task-successful (excl. clean_exit): {m['is_task_successful']}")
    lines.append(f"    Action-list match: {m.get('is_action_match', 'N/A')}")
    if "db_state_match" in m:
        lines.append(f"    DB-state match: {m['db_state_match']}")
    if "db_state_assertion_pass_rate" in m:
        lines.append(f"    DB-state-assertion pass rate: {_num(_times_100(m['db_state_assertion_pass_rate']), '.2f')}%")
    if "nl_assertion_pass_rate" in m:
        lines.append(f"    NL-assertion pass rate: {_num(_times_100(m['nl_assertion_pass_rate']), '.2f')}%")
    if "judge_score" in m:
        lines.append(f"    Judge score: {_num(m['judge_score'], '.2f')}")
    if "judge_passed" in m:
        lines.append(f"    Judge passed: {m['judge_passed']}")
    breakdown = m.get("success_breakdown")
    failed = breakdown.get("failed") if isinstance(breakdown, Mapping) else None
    if failed:
        lines.append(f"    Failed signals: {', '.join(failed)}")
    turns = m.get("total_turns", 0)
    duration = m.get("scenario_duration", 0.0)
    lines.append(f"  Turns: {turns}")
    if m.get("insufficient_agent_turns"):
        lines.append(STALL_LINE)
    lines.append(f"  Duration: {_num(duration, '.1f')}s")
    if is_number(duration) and is_number(turns) and duration > 0:
        lines.append(f"  Turns/min: {turns / (duration / 60):.1f}")
    stats = m.get("latency_stats")
    if not isinstance(stats, Mapping):
        stats = latency_stats(latency_values(m.get("latencies")))
    count = stats.get("count", 0)
    lines.append(f"  Latency Measurements: {count}")
    if is_number(count) and count > 0:
        for label, key in LATENCY_LABELS:
            lines.append(f"    {label}: {_num(stats.get(key), '.1f')}ms")
    return lines


def _overall_latency(run: RunAggregator) -> list[str]:
    stats = run.overall_latency_stats()
    return [
        "Overall Latency Statistics:",
        RULE_DASH,
        f"  Total Measurements: {stats['count']}",
        f"  Mean: {stats['mean_ms']:.1f}ms",
        f"  P50: {stats['p50_ms']:.1f}ms",
        f"  P95: {stats['p95_ms']:.1f}ms",
        f"  Min: {stats['min_ms']:.1f}ms",
        f"  Max: {stats['max_ms']:.1f}ms",
    ]


def _stall_warning(run: RunAggregator, min_agent_turns: int) -> list[str]:
    return [
        f"WARNING: {len(run.stalled)} scenario(s) had fewer than {min_agent_turns} agent turn(s) "
        "(likely stalled LLM / server hang) and were counted as failures.",
        f"Stalled scenarios: {', '.join(run.stalled)}",
        f"Run with --resume <TIMESTAMP> --min-agent-turns {min_agent_turns} to retry them.",
    ]


def _success_rates(run: RunAggregator) -> list[str]:
    success, task = run.buckets[agg.SUCCESS], run.buckets[agg.TASK_SUCCESS]
    if success.rate is None:
        return ["Overall Success Rate: N/A (no scenarios had any applicable signal)"]
    lines = [
        f"Overall Success Rate: {_pct(success.rate)} ({success.passes}/{success.total} scenarios — "
        "strict conjunction across all applicable signals)"
    ]
    if task.rate is not None:
        lines.append(f"Task Success Rate (excl. clean_exit): {_pct(task.rate)} ({task.passes}/{task.total} scenarios)")
    return lines


def _signal_rates(run: RunAggregator) -> list[str]:
    lines = []
    for bucket, label, unit in (
        (agg.ACTION_MATCH, "Action-list match:", "scenarios"),
        (agg.DB_STATE, "DB-State match:", "scenarios"),
        (agg.DB_STATE_ASSERTION, "DB-State-Assertion pass:", "predicates"),
        (agg.NL_ASSERTION, "NL-Assertion pass:", "assertions"),
    ):
        lines += _rate_line(run.buckets[bucket], f"{label:<{LABEL_WIDTH}}", unit)
    if run.judge_score_mean is not None:
        label = f"{'Judge score mean:':<{LABEL_WIDTH}}"
        lines.append(f"  {label}{run.judge_score_mean:.3f} (across {len(run.judge_scores)} scenarios)")
    lines += _rate_line(run.buckets[agg.JUDGE_PASSED], f"{'Judge passed (>= threshold):':<{LABEL_WIDTH}}", "scenarios")
    # Upstream does not pad this label: a single space, then the width-6 number.
    lines += _rate_line(run.buckets[agg.CLEAN_EXIT], "Clean exit: ", "scenarios")
    return lines


def _rate_line(bucket: agg.Bucket, label: str, unit: str) -> list[str]:
    if bucket.rate is None:
        return []
    return [f"  {label}{bucket.rate * 100:6.2f}% ({bucket.passes}/{bucket.total} {unit})"]


def _token_usage(run: RunAggregator) -> list[str]:
    if run.tokens["agent"]["n_calls"] + run.tokens["user"]["n_calls"] <= 0:
        return []
    lines = ["", "", "Token Usage:", RULE_DASH]
    grand_total = 0
    for side in agg.TOKEN_SIDES:
        usage = run.tokens[side]
        total = usage["prompt"] + usage["completion"]
        grand_total += total
        lines.append(
            f"  {side}: {usage['n_calls']} call(s), prompt={usage['prompt']:,}, "
            f"completion={usage['completion']:,}, total={total:,}"
        )
    lines.append(f"  Run total: {grand_total:,} tokens")
    return lines


def _per_domain(run: RunAggregator) -> list[str]:
    lines: list[str] = []
    for bucket, heading in DOMAIN_BLOCKS:
        domains = run.domains(bucket)
        if len(domains) <= 1:
            continue
        lines += ["", "", heading] if bucket == agg.SUCCESS else ["", heading]
        lines.append(RULE_DASH)
        for domain, outcomes in domains.items():
            lines.append(f"  {domain}: {_pct(outcomes.rate or 0.0)} ({outcomes.passes}/{outcomes.total})")
    return lines


# --- project block ------------------------------------------------------------------------------


def _project_block(run: RunAggregator, block: ProjectBlock) -> list[str]:
    lines = ["evasite:"]
    success = run.buckets[agg.SUCCESS]
    if success.rate is None:
        lines.append("  Success rate: N/A (n=0)")
    else:
        low, high = wilson_interval(success.passes, success.total)
        lines.append(
            f"  Success rate: {_pct(success.rate)} (n={success.total}), 95% Wilson CI [{_pct(low)}, {_pct(high)}]"
        )
    if block.trials > 1:
        for k, value in sorted(_pass_hat_values(run, block).items()):
            lines.append(f"  pass^{k}: {_pct(value)}")
        flaky = flaky_scenarios(run.trial_outcomes)
        lines.append(f"  Flaky scenarios (verdict varies over trials): {len(flaky)} of {len(run.trial_outcomes)}")
        lines += [f"    {name}: {passes}/{trials} passed" for name, (passes, trials) in flaky.items()]
    if block.null_agent_floor is not None:
        floor, selected = block.null_agent_floor
        lines.append(
            f"  Null-agent floor: {floor} of {selected} selected scenarios "
            "have a gold database equal to their initial one"
        )
    accuracy = block.key_entity_accuracy if block.key_entity_accuracy is not None else run.key_entity_accuracy()
    for direction, counts in (accuracy or {}).items():
        spoken, intact = counts.get("spoken", 0), counts.get("intact", 0)
        rate = _pct(intact / spoken) if spoken else "N/A"
        lines.append(f"  Key-entity accuracy ({direction}): {rate} ({intact}/{spoken} entities)")
    lines += _per_condition(run)
    lines += _token_sources(run)
    return lines


def _per_condition(run: RunAggregator) -> list[str]:
    """The degradation table of a ``--conditions`` run (``scoring.core.condition_table``)."""
    rows = condition_table(run)
    if not rows:
        return []
    lines = ["  Per condition:"]
    for row in rows:
        if row.interval is not None:
            low, high = row.interval
            rate = f"{row.passes}/{row.counted} passed ({_pct(row.rate)}, 95% CI [{_pct(low)}, {_pct(high)}])"
        else:
            rate = "N/A (n=0)"
        entities = ", ".join(f"{direction} {_pct(intact / spoken) if spoken else 'N/A'} ({intact}/{spoken})"
                             for direction, (intact, spoken) in row.entities.items())
        lines.append(f"    {row.name}: {rate}; key entities {entities or 'N/A'}; "
                     f"handoff p50 {_ms(row.handoff_p50_ms)}, p95 {_ms(row.handoff_p95_ms)}; "
                     f"yield p50 {_ms(row.yield_p50_ms)}, p95 {_ms(row.yield_p95_ms)} (n={row.yields})")
    lines.append("  Degradation: " + " → ".join(f"{row.name} {row.passes}/{row.counted}" for row in rows))
    return lines


def _ms(value: float | None) -> str:
    return f"{value:.0f} ms" if value is not None else "N/A"


def _token_sources(run: RunAggregator) -> list[str]:
    """Says what the upstream Token Usage block's numbers are: the server's own counts, the
    built-in models' estimates, or calls whose response carried no usage at all."""
    parts = []
    for side in agg.TOKEN_SIDES:
        source = run.token_source(side)
        if source is None:
            continue
        missing, calls = run.calls_without_usage[side], run.tokens[side]["n_calls"]
        note = f" ({missing} of {calls} call(s) reported no usage)" if missing else ""
        parts.append(f"{side} {TOKEN_SOURCE_LABELS.get(source, source)}{note}")
    return [f"  Token counts: {'; '.join(parts)}"] if parts else []


def _pass_hat_values(run: RunAggregator, block: ProjectBlock) -> dict[int, float]:
    if block.pass_hat_k is not None:
        return block.pass_hat_k
    # Computed from the run: each k over the scenarios with at least k scored trials.
    values = {}
    for k in range(1, block.trials + 1):
        eligible = [outcomes for outcomes in run.trial_outcomes.values() if len(outcomes) >= k]
        if eligible:
            values[k] = pass_hat_k(eligible, k)
    return values
