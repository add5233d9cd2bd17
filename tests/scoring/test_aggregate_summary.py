"""§15: aggregation buckets and the byte layout of all_summary.txt (worked example of §15.4)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoring.core import aggregate as agg
from scoring.core.aggregate import RunAggregator
from scoring.core.latency import latency_stats
from scoring.core.summary import ProjectBlock, format_all_summary

# The complete file from harness.md §15.4, verbatim.
WORKED_EXAMPLE = """\
EVALUATION SUMMARY
================================================================================

Total Scenarios: 3
Total Duration: 15.4mins
Total Turns: 30

Per-Scenario Results:
--------------------------------------------------------------------------------

====== eva_airline__voluntary_date_change ======:
  Is successful: True
  Is task-successful (excl. clean_exit): True
    Action-list match: N/A
    DB-state match: True
    Judge score: 0.95
    Judge passed: True
  Turns: 16
  Duration: 412.3s
  Turns/min: 2.3
  Latency Measurements: 3
    Mean: 2415.3ms
    P50: 2345.6ms
    P95: 3100.2ms
    Min: 1800.0ms
    Max: 3100.2ms

====== eva_airline__1_1_3 ======:
  Is successful: False
  Is task-successful (excl. clean_exit): False
    Action-list match: N/A
    DB-state match: False
    Judge score: 0.40
    Judge passed: False
    Failed signals: db_state_match
  Turns: 12
  Duration: 388.0s
  Turns/min: 1.9
  Latency Measurements: 2
    Mean: 3500.2ms
    P50: 4100.0ms
    P95: 4100.0ms
    Min: 2900.5ms
    Max: 4100.0ms

====== eva_airline__1_1_4 ======:
  Is successful: False
  Is task-successful (excl. clean_exit): False
    Action-list match: N/A
    DB-state match: True
    Judge score: 0.00
    Judge passed: False
    Failed signals: clean_exit
  Turns: 2
  [COUNTED AS FAILURE: insufficient agent turns / stalled — excluded from per-signal rates]
  Duration: 120.9s
  Turns/min: 1.0
  Latency Measurements: 0


Overall Latency Statistics:
--------------------------------------------------------------------------------
  Total Measurements: 5
  Mean: 2849.3ms
  P50: 2900.5ms
  P95: 4100.0ms
  Min: 1800.0ms
  Max: 4100.0ms


WARNING: 1 scenario(s) had fewer than 3 agent turn(s) (likely stalled LLM / server hang) and were counted as failures.
Stalled scenarios: eva_airline__1_1_4
Run with --resume <TIMESTAMP> --min-agent-turns 3 to retry them.


Overall Success Rate: 33.33% (1/3 scenarios — strict conjunction across all applicable signals)
Task Success Rate (excl. clean_exit): 33.33% (1/3 scenarios)

Per-signal pass rates:
  DB-State match:               50.00% (1/2 scenarios)
  Judge score mean:            0.675 (across 2 scenarios)
  Judge passed (>= threshold):  50.00% (1/2 scenarios)
  Clean exit: 100.00% (2/2 scenarios)


Token Usage:
--------------------------------------------------------------------------------
  agent: 29 call(s), prompt=373,690, completion=4,660, total=378,350
  user: 18 call(s), prompt=80,642, completion=1,222, total=81,864
  Run total: 460,214 tokens
"""

EVA_BREAKDOWN_EXCLUDED = ["judge_passed"]


def _metrics(
    name: str,
    *,
    success: bool | str,
    db: bool,
    clean: bool,
    judge: float | None,
    turns: int,
    duration: float,
    latencies: list[float],
    tokens: tuple[int, int, int, int, int, int],
    stalled: bool = False,
    threshold: float = 0.9,
) -> dict:
    """A metrics.json dict as the runner writes it for an eva scenario."""
    failed = [s for s, v in (("db_state_match", db), ("clean_exit", clean)) if not v]
    passed = [s for s, v in (("db_state_match", db), ("clean_exit", clean)) if v]
    m: dict = {
        "scenario_name": name,
        "total_turns": turns,
        "scenario_duration": duration,
        "latency_stats": latency_stats(latencies),
        "latencies": [{"user_transcript": "u", "agent_transcript": "a", "latency_ms": v} for v in latencies],
        "stop_reason": "[INACTIVITY_TIMEOUT]" if stalled else "[EXIT]",
        "clean_exit": clean,
        "is_action_match": "N/A",
        "token_usage": {
            "agent": {"n_calls": tokens[0], "prompt": tokens[1], "completion": tokens[2]},
            "user": {"n_calls": tokens[3], "prompt": tokens[4], "completion": tokens[5]},
        },
        "db_state_match": db,
        "success_breakdown": {"passed": passed, "failed": failed, "not_applicable": [], "excluded": []},
        "is_successful": success,
    }
    if judge is not None:
        m["judge_score"] = judge
        m["judge_passed"] = judge >= threshold
        m["success_breakdown"]["excluded"] = list(EVA_BREAKDOWN_EXCLUDED)
    if isinstance(success, bool):
        m["is_task_successful"] = not [f for f in failed if f != "clean_exit"]
    if stalled:
        m["insufficient_agent_turns"] = True
        m["is_successful"] = False
        m["is_task_successful"] = False
    return m


def worked_example_metrics() -> list[dict]:
    return [
        _metrics(
            "eva_airline__voluntary_date_change", success=True, db=True, clean=True, judge=0.95, turns=16, duration=412.3,
            latencies=[2345.6, 1800.0, 3100.2], tokens=(16, 200000, 2500, 9, 40000, 600),
        ),
        _metrics(
            "eva_airline__1_1_3", success=False, db=False, clean=True, judge=0.40, turns=12, duration=388.0,
            latencies=[4100.0, 2900.5], tokens=(12, 160000, 2000, 8, 38000, 560),
        ),
        _metrics(
            "eva_airline__1_1_4", success=False, db=True, clean=False, judge=0.0, turns=2, duration=120.9,
            latencies=[], tokens=(1, 13690, 160, 1, 2642, 62), stalled=True,
        ),
    ]


def test_worked_example_byte_for_byte() -> None:
    assert format_all_summary(worked_example_metrics(), min_agent_turns=3) == WORKED_EXAMPLE


def test_worked_example_from_fed_aggregator() -> None:
    run = RunAggregator(3)
    for m in worked_example_metrics():
        run.add(m)
    assert format_all_summary(run, min_agent_turns=3) == WORKED_EXAMPLE
    with pytest.raises(ValueError):
        format_all_summary(run, min_agent_turns=2)


def _lines(text: str) -> list[str]:
    return text.split("\n")


def test_no_stall_when_rule_disabled_and_warning_uses_current_n() -> None:
    text = format_all_summary(worked_example_metrics(), min_agent_turns=0)
    assert "WARNING" not in text
    # The per-scenario stall line follows the recorded flag, the rates follow the current rule.
    assert "  [COUNTED AS FAILURE" in text
    assert "  DB-State match:               66.67% (2/3 scenarios)\n" in text
    assert "\n  Max: 4100.0ms\n\n\nOverall Success Rate:" in text


def test_minimal_run_omits_rates_and_prints_na() -> None:
    m = {"scenario_name": "solo", "total_turns": 0, "scenario_duration": 0.0, "is_successful": "N/A", "latencies": []}
    text = format_all_summary([m], min_agent_turns=3)
    assert text == (
        "EVALUATION SUMMARY\n" + "=" * 80 + "\n\n"
        "Total Scenarios: 1\nTotal Duration: 0.0mins\nTotal Turns: 0\n\n"
        "Per-Scenario Results:\n" + "-" * 80 + "\n\n"
        "====== solo ======:\n"
        "  Is successful: N/A\n"
        "    Action-list match: N/A\n"
        "  Turns: 0\n"
        "  Duration: 0.0s\n"
        "  Latency Measurements: 0\n\n\n"
        "Overall Latency Statistics:\n" + "-" * 80 + "\n"
        "  Total Measurements: 0\n"
        "  Mean: -1.0ms\n  P50: -1.0ms\n  P95: -1.0ms\n  Min: -1.0ms\n  Max: -1.0ms\n\n\n"
        "Overall Success Rate: N/A (no scenarios had any applicable signal)\n\n"
        "Per-signal pass rates:\n"
    )


def test_clean_exit_spacing_and_other_rate_lines(tmp_path: Path) -> None:
    d = tmp_path / "s"
    d.mkdir()
    (d / "judge_result.json").write_text(json.dumps({"nl_assertion_verdicts": [{"passed": True}, {"passed": False}, {"passed": True}]}))
    rows = []
    for i, clean in enumerate([True, True, True, True, False]):
        rows.append({"scenario_name": f"x__{i}", "clean_exit": clean, "is_successful": clean,
                     "success_breakdown": {"failed": [] if clean else ["clean_exit"]}, "is_action_match": i != 0,
                     "db_state_assertion_verdicts": [{"passed": True}, {"passed": i > 0}], "total_turns": 4, "scenario_duration": 60.0})
    rows[0]["nl_assertion_pass_rate"] = 2 / 3
    rows[0]["scenario_directory"] = str(d)
    text = format_all_summary(rows, min_agent_turns=0)
    assert "  Clean exit:  80.00% (4/5 scenarios)\n" in text
    assert "  Action-list match:            80.00% (4/5 scenarios)\n" in text
    assert "  DB-State-Assertion pass:      90.00% (9/10 predicates)\n" in text
    assert "  NL-Assertion pass:            66.67% (2/3 assertions)\n" in text
    assert "DB-State match:" not in text and "Judge" not in text and "Token Usage" not in text
    assert "    NL-assertion pass rate: 66.67%\n" in text
    assert "Task Success Rate (excl. clean_exit): 100.00% (5/5 scenarios)\n" in text
    assert "Per-Domain" not in text  # single domain


def test_per_domain_blocks_only_for_multi_domain_buckets() -> None:
    rows = [
        {"scenario_name": "eva_airline__1", "is_successful": True, "success_breakdown": {"failed": []}, "db_state_match": True},
        {"scenario_name": "eva_airline__2", "is_successful": False, "success_breakdown": {"failed": ["clean_exit"]}, "db_state_match": True},
        {"scenario_name": "alpha__1", "is_successful": False, "success_breakdown": {"failed": ["db_state_match"]}, "db_state_match": False,
         "db_state_assertion_verdicts": [{"passed": True}]},
    ]
    text = format_all_summary(rows, min_agent_turns=0)
    tail = text[text.index("Per-signal pass rates:"):]
    assert tail == (
        "Per-signal pass rates:\n"
        "  DB-State match:               66.67% (2/3 scenarios)\n"
        "  DB-State-Assertion pass:     100.00% (1/1 predicates)\n"
        "\n\nPer-Domain Success Rate:\n" + "-" * 80 + "\n"
        "  alpha: 0.00% (0/1)\n"
        "  eva_airline: 50.00% (1/2)\n"
        "\nPer-Domain Task Success Rate (excl. clean_exit):\n" + "-" * 80 + "\n"
        "  alpha: 0.00% (0/1)\n"
        "  eva_airline: 100.00% (2/2)\n"
        "\nPer-Domain DB-State Match Rate:\n" + "-" * 80 + "\n"
        "  alpha: 0.00% (0/1)\n"
        "  eva_airline: 100.00% (2/2)\n"
    )  # the DB-State-Assertion bucket spans one domain only: no block


def test_stall_warning_block_lists_names_in_order() -> None:
    rows = [
        {"scenario_name": n, "total_turns": 2, "token_usage": {"agent": {"n_calls": 1}}, "is_successful": True, "db_state_match": True}
        for n in ("d__b", "d__a")
    ]
    lines = _lines(format_all_summary(rows, min_agent_turns=4))
    i = lines.index("WARNING: 2 scenario(s) had fewer than 4 agent turn(s) (likely stalled LLM / server hang) and were counted as failures.")
    assert lines[i - 2 : i] == ["", ""]
    assert lines[i + 1] == "Stalled scenarios: d__b, d__a"
    assert lines[i + 2] == "Run with --resume <TIMESTAMP> --min-agent-turns 4 to retry them."
    assert lines[i + 3 : i + 6] == ["", "", "Overall Success Rate: 0.00% (0/2 scenarios — strict conjunction across all applicable signals)"]
    assert "DB-State match:  " not in "\n".join(lines)  # stalled: skipped in per-signal buckets
    assert lines[-8:] == [
        "",
        "",
        "Token Usage:",
        "-" * 80,
        "  agent: 2 call(s), prompt=0, completion=0, total=0",
        "  user: 0 call(s), prompt=0, completion=0, total=0",
        "  Run total: 0 tokens",
        "",
    ]


def test_token_block_printed_when_only_user_calls() -> None:
    rows = [{"scenario_name": "a", "token_usage": {"user": {"n_calls": 2, "prompt": 1234, "completion": 5}}}]
    text = format_all_summary(rows, min_agent_turns=0)
    assert text.endswith(
        "Per-signal pass rates:\n\n\nToken Usage:\n" + "-" * 80 + "\n"
        "  agent: 0 call(s), prompt=0, completion=0, total=0\n"
        "  user: 2 call(s), prompt=1,234, completion=5, total=1,239\n"
        "  Run total: 1,239 tokens\n"
    )


# --- aggregator ---------------------------------------------------------------------------------


def test_stalled_scenario_skips_every_signal_bucket(tmp_path: Path) -> None:
    d = tmp_path / "x"
    (d / "bot_logs_agent").mkdir(parents=True)
    (d / "bot_logs_agent" / "llm_context.json").write_text(json.dumps([{"role": "assistant"}]))
    (d / "judge_result.json").write_text(json.dumps({"nl_assertion_verdicts": [{"passed": True}]}))
    m = {"scenario_name": "dom__x", "is_action_match": True, "judge_score": 1.0, "judge_passed": True, "db_state_match": True,
         "clean_exit": True, "nl_assertion_pass_rate": 1.0, "db_state_assertion_verdicts": [{"passed": True}], "is_successful": True,
         "token_usage": {"agent": {"n_calls": 0, "prompt": 10, "completion": 2}}, "latencies": [{"latency_ms": 5.0}]}
    run = RunAggregator(3)
    run.add(m, d)  # n_calls 0 -> context count 1 < 3
    assert run.stalled == ["dom__x"]
    assert run.buckets[agg.SUCCESS].outcomes == [False] and run.buckets[agg.TASK_SUCCESS].outcomes == [False]
    for name in (agg.ACTION_MATCH, agg.DB_STATE, agg.DB_STATE_ASSERTION, agg.NL_ASSERTION, agg.JUDGE_PASSED, agg.CLEAN_EXIT):
        assert run.rate(name) is None
    assert run.judge_scores == []
    assert run.tokens["agent"] == {"n_calls": 0, "prompt": 10, "completion": 2}
    assert run.latencies == [5.0]
    # Same metrics with the rule off: every bucket filled, NL read back from judge_result.json.
    run = RunAggregator(0)
    run.add(m, d)
    assert run.stalled == []
    assert run.rate(agg.NL_ASSERTION) == 1.0 and run.rate(agg.DB_STATE_ASSERTION) == 1.0 and run.judge_score_mean == 1.0


def test_ill_typed_fields_contribute_nothing() -> None:
    run = RunAggregator(3)
    run.add({"scenario_name": "a", "is_action_match": "N/A", "judge_score": "0.5", "db_state_match": None, "clean_exit": 1,
             "is_successful": "N/A", "token_usage": {"agent": {"n_calls": "3"}}, "total_turns": "7", "nl_assertion_pass_rate": 1.0})
    assert all(run.rate(name) is None for name in agg.BUCKETS)
    assert run.judge_scores == [] and run.tokens["agent"]["n_calls"] == 0 and run.total_turns == 0


def test_na_scenario_in_neither_success_bucket() -> None:
    run = RunAggregator(0)
    run.add({"scenario_name": "a__1", "is_successful": "N/A", "clean_exit": True})
    assert run.buckets[agg.SUCCESS].total == 0 and run.buckets[agg.TASK_SUCCESS].total == 0 and run.rate(agg.CLEAN_EXIT) == 1.0


def test_task_success_from_breakdown_ignores_clean_exit() -> None:
    run = RunAggregator(0)
    run.add({"scenario_name": "a", "is_successful": False, "success_breakdown": {"failed": ["clean_exit"]}})
    run.add({"scenario_name": "b", "is_successful": False, "is_task_successful": False})  # no breakdown: fall back
    assert run.buckets[agg.TASK_SUCCESS].outcomes == [True, False]


def test_key_entity_totals_and_trials() -> None:
    run = RunAggregator(0)
    for trial, ok in enumerate([True, False, True], 1):
        run.add({"scenario_name": f"eva_airline__1_1_3__trial{trial}", "is_successful": ok,
                 "key_entity_accuracy": {"user_to_agent": {"spoken": 4, "intact": 3, "rate": 0.75}, "agent_to_user": {"spoken": 0, "intact": 0, "rate": None}}})
    assert run.trial_outcomes == {"eva_airline__1_1_3": [True, False, True]}
    assert run.key_entity_accuracy() == {
        "user_to_agent": {"spoken": 12, "intact": 9, "rate": 0.75},
        "agent_to_user": {"spoken": 0, "intact": 0, "rate": None},
    }
    assert set(run.domains(agg.SUCCESS)) == {"eva_airline"}


# --- project block ------------------------------------------------------------------------------


def test_project_block_appended_after_upstream_layout() -> None:
    block = ProjectBlock(null_agent_floor=(6, 50), key_entity_accuracy={"user_to_agent": {"spoken": 20, "intact": 19}, "agent_to_user": {"spoken": 0, "intact": 0}})
    text = format_all_summary(worked_example_metrics(), min_agent_turns=3, project_block=block)
    assert text.startswith(WORKED_EXAMPLE)
    assert text[len(WORKED_EXAMPLE):] == (
        "\n"
        "evasite:\n"
        "  Success rate: 33.33% (n=3), 95% Wilson CI [6.15%, 79.23%]\n"
        "  Null-agent floor: 6 of 50 selected scenarios have a gold database equal to their initial one\n"
        "  Key-entity accuracy (user_to_agent): 95.00% (19/20 entities)\n"
        "  Key-entity accuracy (agent_to_user): N/A (0/0 entities)\n"
    )


def test_project_block_pass_hat_k_given_or_computed() -> None:
    rows = [{"scenario_name": f"d__s{s}__trial{t}", "is_successful": ok}
            for s, results in enumerate([[True, True], [True, False]]) for t, ok in enumerate(results, 1)]
    computed = format_all_summary(rows, min_agent_turns=0, project_block=ProjectBlock(trials=2))
    assert computed.endswith("evasite:\n  Success rate: 75.00% (n=4), 95% Wilson CI [30.06%, 95.44%]\n  pass^1: 75.00%\n"
                             "  pass^2: 50.00%\n  Flaky scenarios (verdict varies over trials): 1 of 2\n"
                             "    d__s1: 1/2 passed\n")
    given = format_all_summary(rows, min_agent_turns=0, project_block=ProjectBlock(trials=2, pass_hat_k={2: 0.1}))
    assert "  pass^2: 10.00%\n  Flaky scenarios" in given
    single = format_all_summary(rows, min_agent_turns=0, project_block=ProjectBlock(pass_hat_k={2: 0.1}))
    assert "pass^" not in single  # trials == 1: no pass^k lines
    empty = format_all_summary([], min_agent_turns=0, project_block=ProjectBlock())
    assert empty.endswith("\nevasite:\n  Success rate: N/A (n=0)\n")


def test_ill_typed_fields_are_printed_not_fatal() -> None:
    m = {"scenario_name": "old", "is_successful": True, "judge_score": None, "nl_assertion_pass_rate": "n/a",
         "scenario_duration": None, "total_turns": 3, "latency_stats": {"count": 1, "mean_ms": 5}}
    text = format_all_summary([m], min_agent_turns=0)
    assert "    Judge score: None\n" in text and "    NL-assertion pass rate: n/a%\n" in text
    assert "  Duration: Nones\n" in text and "Turns/min" not in text
    assert "    Mean: 5.0ms\n    P50: Nonems\n" in text


def test_token_counts_are_labelled_by_source_in_the_project_block() -> None:
    """Estimates and unknown usage are said to be so; a response without usage is a call, not 0 tokens."""
    usage = {"agent": {"n_calls": 3, "prompt": 300, "completion": 30, "source": "estimate", "calls_without_usage": 0},
             "user": {"n_calls": 4, "prompt": None, "completion": None, "source": "unknown", "calls_without_usage": 4}}
    rows = [{"scenario_name": "eva_airline__a", "token_usage": usage, "is_successful": True},
            {"scenario_name": "eva_airline__b", "token_usage": {**usage, "agent": {**usage["agent"], "source": "server"}},
             "is_successful": False}]
    text = format_all_summary(rows, min_agent_turns=0, project_block=ProjectBlock())
    assert "  user: 8 call(s), prompt=0, completion=0, total=0\n" in text, "upstream block unchanged"
    assert text.splitlines()[-1] == (
        "  Token counts: agent partly reported, partly estimated or unknown; "
        "user unknown (8 of 8 call(s) reported no usage)"
    )
    only_estimates = format_all_summary(rows[:1], min_agent_turns=0, project_block=ProjectBlock())
    assert only_estimates.splitlines()[-1].startswith("  Token counts: agent estimates (built-in model); user unknown")
    legacy = format_all_summary([{"scenario_name": "x", "token_usage": {"agent": {"n_calls": 2}}}],
                                min_agent_turns=0, project_block=ProjectBlock())
    assert "Token counts" not in legacy, "old metrics without a source are not labelled"
