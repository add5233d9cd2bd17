"""The pure parts behind the run, result and compare pages: charts, the tool-call timeline, the
compare ordering and re-scoring from stored metrics."""
from __future__ import annotations

import json

from scenarios.registry import scenario_group
from scoring.web.charts import HEIGHT, MARGIN, group_bars, latency_histogram
from scoring.web.compare import ResultSummary, compare_rows
from scoring.web.review import results_csv, rescored_metrics
from scoring.web.timeline import build_timeline, final_actions


def test_scenario_groups_and_stacked_bars() -> None:
    assert [scenario_group(x) for x in ("1.1.3", "7.2.1", "", None, "seed")] == ["1.x", "7.x", "other", "other", "other"]
    bars = group_bars([("2.x", True), ("1.x", True), ("1.x", False), ("10.x", True), ("other", None)])
    assert [b.group for b in bars] == ["1.x", "2.x", "10.x", "other"]
    one = bars[0]
    assert (one.passed, one.failed, one.total) == (1, 1, 2)
    assert one.pass_y + one.pass_height == HEIGHT - MARGIN  # passed sits on the axis
    assert one.fail_y + one.fail_height == one.pass_y  # failed stacked on top
    assert one.pass_height + one.fail_height == HEIGHT - 2 * MARGIN  # the tallest group fills the plot
    assert group_bars([]) == []


def test_latency_histogram_bins_every_value_and_marks_percentiles() -> None:
    values = [100.0] * 10 + [900.0] * 9 + [2000.0]
    histogram = latency_histogram(values, bin_count=20)
    assert histogram.count == 20 and sum(b["count"] for b in histogram.bins) == 20
    assert histogram.p50_ms == 900.0 and histogram.p95_ms == 2000.0
    assert histogram.bins[-1]["count"] == 1  # the maximum falls in the last bin
    assert histogram.p50_x < histogram.p95_x
    assert latency_histogram([]) is None


def test_timeline_puts_tool_calls_before_the_reply_that_followed_them() -> None:
    turns = [{"role": "agent", "text": "Hello"}, {"role": "user", "text": "Code ABC123"},
             {"role": "agent", "text": "Done."}]
    context = [
        {"role": "system", "content": "..."}, {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Code ABC123"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "get_reservation",
                                                                       "arguments": json.dumps({"code": "ABC123"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"status": "success"})},
        {"role": "assistant", "tool_calls": [{"id": "c2", "function": {"name": "rebook_flight", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c2",
         "content": json.dumps({"status": "error", "error_type": "validation_error", "message": "bad journey"})},
        {"role": "assistant", "tool_calls": [{"id": "c3", "function": {"name": "assign_seat", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c3", "content": json.dumps({"status": "success"})},
        {"role": "assistant", "content": "Done."},
    ]
    actions = final_actions([{"actions": [{"action_type": "assign_seat", "seat": "21C"},
                                          {"action_type": "issue_voucher"}]}])
    items, unmatched = build_timeline(turns, context, actions, [(0.0, 1.2), (1.5, 3.0), (4.0, 5.5)],
                                      [{"agent_transcript": "Done.", "latency_ms": 640.0}])
    assert [(i.kind, getattr(i, "name", getattr(i, "text", ""))) for i in items] == [
        ("turn", "Hello"), ("turn", "Code ABC123"), ("tool", "get_reservation"), ("tool", "rebook_flight"),
        ("tool", "assign_seat"), ("turn", "Done.")]
    lookup, rebook, seat = items[2], items[3], items[4]
    assert lookup.status == "success" and lookup.arguments == {"code": "ABC123"}
    assert (rebook.status, rebook.error_type, rebook.message) == ("error", "validation_error", "bad journey")
    assert seat.actions == [{"action_type": "assign_seat", "seat": "21C"}]
    assert unmatched == [{"action_type": "issue_voucher"}]
    assert (items[5].start, items[5].end) == (4.0, 5.5)
    assert items[5].latency_ms == 640.0 and items[0].latency_ms is None  # the handoff Done. answered
    assert json.loads(seat.result_text) == {"status": "success"} and rebook.has_result
    assert json.loads(rebook.result_text)["message"] == "bad journey"


def test_compare_lists_regressions_then_fixes_then_the_rest() -> None:
    def s(pk: int, ok: bool | None) -> ResultSummary:
        return ResultSummary(pk, ok, "[EXIT]", 5, 900.0)

    a = {("same", 1): s(1, True), ("fixed", 1): s(2, False), ("broke", 1): s(3, True), ("only_a", 1): s(4, True)}
    b = {("same", 1): s(5, True), ("fixed", 1): s(6, True), ("broke", 1): s(7, False), ("only_b", 1): s(8, False)}
    rows = compare_rows(a, b, [*a, *b])
    assert [(r.scenario_name, r.flip) for r in rows] == [
        ("broke", "pass→fail"), ("fixed", "fail→pass"), ("same", ""), ("only_a", ""), ("only_b", "")]
    assert rows[3].b is None and rows[4].a is None


def test_rescore_recomputes_the_verdict_from_stored_signals() -> None:
    metrics = {"db_state_match": True, "clean_exit": False, "is_successful": True, "is_task_successful": True,
               "success_breakdown": {"passed": ["db_state_match", "clean_exit"]}}
    rescored = rescored_metrics(metrics, ["db_state_match", "clean_exit"])
    assert rescored["is_successful"] is False and rescored["is_task_successful"] is True
    assert rescored["success_breakdown"]["failed"] == ["clean_exit"]
    assert rescored_metrics(metrics, ["db_state_match"])["is_successful"] is True
    stalled = rescored_metrics({**metrics, "insufficient_agent_turns": True}, ["db_state_match"])
    assert stalled["is_successful"] is False


def test_results_csv_has_a_header_and_one_line_per_row() -> None:
    text = results_csv([{"run": "eval_1", "scenario_name": "x", "trial": 1, "is_successful": True, "review_note": "a, b"}])
    header, row = text.splitlines()
    assert header.startswith("run,scenario_name,trial,is_successful")
    assert row.startswith('eval_1,x,1,True') and '"a, b"' in row
