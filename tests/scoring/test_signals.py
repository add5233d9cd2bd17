"""§9.5 policy rows, §11 signals and composite, §10 agent turns and stall rule, §11.3 matching."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoring.core import signals as s


# --- §9.5: every row -------------------------------------------------------------------------------


def _verdict(policy: str, *, tool: bool = False, sim: bool = False, stop: str = s.STOP_TIMEOUT, last: str | None = "agent"):
    return s.end_verdict(policy, end_conversation_tool_called=tool, simulator_end_reported=sim, stop_reason=stop, last_speaker=last)


@pytest.mark.parametrize(
    ("policy", "kwargs", "expected"),
    [
        (s.POLICY_TOOL_ONLY, {"tool": True, "stop": s.STOP_EXIT}, (True, "agent_end_conversation_tool")),
        (s.POLICY_TOOL_ONLY, {"sim": True}, (False, "agent_end_conversation_tool_missing")),
        (s.POLICY_TOOL_ONLY, {"stop": s.STOP_INACTIVITY_TIMEOUT, "last": "user"}, (False, "agent_end_conversation_tool_missing")),
        (s.POLICY_TOOL_ONLY, {"stop": s.STOP_DISCONNECTED}, (False, "connection_lost")),
        # An exit tag that raced the lost connection does not make it clean (§9.1), under either policy.
        (s.POLICY_TOOL_ONLY, {"tool": True, "stop": s.STOP_DISCONNECTED}, (False, "connection_lost")),
        (s.POLICY_VALID_TERMINAL_STATE, {"tool": True, "sim": True, "stop": s.STOP_DISCONNECTED}, (False, "connection_lost")),
        (s.POLICY_VALID_TERMINAL_STATE, {"tool": True, "sim": True, "stop": s.STOP_EXIT}, (True, "agent_end_conversation_tool")),
        (s.POLICY_VALID_TERMINAL_STATE, {"sim": True, "stop": s.STOP_SIMULATOR_EXIT}, (True, "simulator_reported_end")),
        (s.POLICY_VALID_TERMINAL_STATE, {"stop": s.STOP_INACTIVITY_TIMEOUT, "last": "user"}, (True, "inactivity_timeout_after_user_final_turn")),
        (s.POLICY_VALID_TERMINAL_STATE, {"stop": s.STOP_INACTIVITY_TIMEOUT, "last": "agent"}, (False, "no_valid_terminal_evidence")),
        (s.POLICY_VALID_TERMINAL_STATE, {"stop": s.STOP_TIMEOUT, "last": "user"}, (False, "no_valid_terminal_evidence")),
        (s.POLICY_VALID_TERMINAL_STATE, {"stop": s.STOP_DISCONNECTED, "last": "user"}, (False, "connection_lost")),
    ],
)
def test_end_policy_rows(policy: str, kwargs: dict, expected: tuple[bool, str]) -> None:
    assert _verdict(policy, **kwargs) == expected


def test_unknown_policy_raises() -> None:
    with pytest.raises(ValueError):
        _verdict("lenient")


def test_constants() -> None:
    assert s.SIGNAL_NAMES == ("is_action_match", "db_state_match", "db_state_assertion", "nl_assertion", "judge_passed", "clean_exit")
    assert s.STOP_REASONS == ("[EXIT]", "[SIMULATOR_EXIT]", "[INACTIVITY_TIMEOUT]", "[TIMEOUT]", "[DISCONNECTED]")
    from voice.bridge import engine

    assert (engine.EXIT, engine.DISCONNECTED) == (s.STOP_EXIT, s.STOP_DISCONNECTED), "one home for the names"
    assert s.POLICIES == ("tool-only", "valid-terminal-state")


# --- §11.1 / §11.4 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "verdict"),
    [(None, None), ("N/A", None), (True, True), (False, False), (1.0, True), (1, True), (0.99, False), (2, True), ("yes", None), ([], None)],
)
def test_normalize_verdict(value, verdict) -> None:
    assert s.normalize_verdict(value) is verdict


def test_signal_verdicts_reads_fields() -> None:
    metrics = {"is_action_match": "N/A", "db_state_match": True, "db_state_assertion_pass_rate": 0.5, "nl_assertion_pass_rate": 1.0, "judge_passed": False, "clean_exit": True}
    assert s.signal_verdicts(metrics) == {
        "is_action_match": None,
        "db_state_match": True,
        "db_state_assertion": False,
        "nl_assertion": True,
        "judge_passed": False,
        "clean_exit": True,
    }
    assert set(s.signal_verdicts({}).values()) == {None}


EVA = ("db_state_match", "clean_exit")


def test_breakdown_eva_typical() -> None:
    verdicts = s.signal_verdicts({"is_action_match": "N/A", "db_state_match": True, "clean_exit": False, "judge_passed": True})
    fields = s.composite_fields(verdicts, EVA)
    assert fields == {
        "success_breakdown": {"passed": ["db_state_match"], "failed": ["clean_exit"], "not_applicable": [], "excluded": ["judge_passed"]},
        "is_successful": False,
        "is_task_successful": True,
    }


def test_breakdown_order_follows_signal_list_not_whitelist() -> None:
    verdicts = {name: True for name in s.SIGNAL_NAMES}
    assert s.success_breakdown(verdicts, ["clean_exit", "is_action_match"])["passed"] == ["is_action_match", "clean_exit"]


def test_all_not_applicable_is_na_without_task_field() -> None:
    fields = s.composite_fields({"is_action_match": None}, ["is_action_match"])
    assert fields == {
        "success_breakdown": {"passed": [], "failed": [], "not_applicable": ["is_action_match"], "excluded": []},
        "is_successful": "N/A",
    }


def test_task_success_fails_on_other_signal() -> None:
    fields = s.composite_fields({"db_state_match": False, "clean_exit": False}, EVA)
    assert fields["is_successful"] is False and fields["is_task_successful"] is False


def test_stall_override_keeps_breakdown() -> None:
    fields = s.composite_fields({"db_state_match": True, "clean_exit": True}, EVA, insufficient_agent_turns=True)
    assert fields["success_breakdown"]["passed"] == ["db_state_match", "clean_exit"]
    assert fields["is_successful"] is False and fields["is_task_successful"] is False
    # Even an all-N/A scenario becomes a counted failure.
    assert s.composite_fields({}, EVA, insufficient_agent_turns=True)["is_successful"] is False


def test_unknown_whitelist_name_raises() -> None:
    with pytest.raises(ValueError, match="db_match"):
        s.success_breakdown({}, ["db_match"])


# --- §10 ----------------------------------------------------------------------------------------


def _context(tmp_path: Path, messages) -> Path:
    (tmp_path / "bot_logs_agent").mkdir()
    (tmp_path / "bot_logs_agent" / "llm_context.json").write_text(json.dumps(messages))
    return tmp_path


def _usage(n_calls) -> dict:
    return {"token_usage": {"agent": {"n_calls": n_calls, "prompt": 1, "completion": 1}}}


def test_agent_turns_prefers_positive_n_calls(tmp_path: Path) -> None:
    scenario = _context(tmp_path, [{"role": "assistant"}])
    assert s.agent_turn_count(_usage(5), scenario) == 5


def test_agent_turns_falls_back_to_context(tmp_path: Path) -> None:
    scenario = _context(tmp_path, [{"role": "system"}, {"role": "assistant"}, {"role": "user"}, {"role": "assistant"}])
    assert s.agent_turn_count(_usage(0), scenario) == 2
    assert s.agent_turn_count({}, scenario) == 2


def test_agent_turns_context_wrapped_in_messages(tmp_path: Path) -> None:
    assert s.agent_turn_count({}, _context(tmp_path, {"messages": [{"role": "assistant"}]})) == 1


def test_agent_turns_zero_then_unknown(tmp_path: Path) -> None:
    assert s.agent_turn_count(_usage(0), tmp_path) == 0  # no context file
    assert s.agent_turn_count(_usage(0), None) == 0
    assert s.agent_turn_count({}, tmp_path) is None
    assert s.agent_turn_count(_usage(True), None) is None  # a bool is not a count
    (tmp_path / "bot_logs_agent").mkdir()
    (tmp_path / "bot_logs_agent" / "llm_context.json").write_text("not json")
    assert s.agent_turn_count(_usage(0), tmp_path) == 0


def test_is_stalled() -> None:
    assert s.is_stalled(2, 3) is True
    assert s.is_stalled(3, 3) is False
    assert s.is_stalled(0, 0) is False  # 0 disables
    assert s.is_stalled(None, 3) is False  # unknown: rule skipped


# --- §11.3 --------------------------------------------------------------------------------------


def test_action_match_files(tmp_path: Path) -> None:
    ref, pred = tmp_path / "reference_answer.json", tmp_path / "final_agent_response.json"
    assert s.is_action_match(ref, pred) == "N/A"
    ref.write_text(json.dumps([{"actions": [{"action_type": "rebook"}]}]))
    assert s.is_action_match(ref, pred) is False
    pred.write_text(json.dumps([{"actions": [{"action_type": "rebook", "side": "agent"}]}]))
    assert s.is_action_match(ref, pred) is True


def test_shape_normalization_and_last_prediction() -> None:
    ref = [{"answer": "B"}]
    assert s.actions_match(ref, [{"answer": "A"}, {"answer": "B"}]) is True
    assert s.actions_match(ref, [{"answer": "B"}, {"answer": "A"}]) is False  # only the last counts
    assert s.actions_match({"answer": "B"}, {"answer": "B", "extra": 1}) is True


def test_distinct_greedy_and_strict() -> None:
    ref = [{"a": 1}, {"a": 1}]
    assert s.actions_match(ref, [{"a": 1}, {"a": 2}]) is False  # each reference needs its own item
    assert s.actions_match(ref, [{"a": 2}, {"a": 1}, {"a": 1.0000001}]) is True
    assert s.actions_match(ref, [{"a": 2}, {"a": 1}, {"a": 1}], disallow_extra_items=True) is False


def test_nested_values() -> None:
    ref = {"actions": [{"seat": {"row": 12, "letter": "C"}}, {"tags": ["x", "y"]}]}
    pred = {"actions": [{"tags": ["y", "z", "x"]}, {"seat": {"row": "12", "letter": "C", "class": "Y"}}]}
    assert s.actions_match(ref, pred) is True
    assert s.actions_match({"tags": ["x", "x"]}, {"tags": ["x"]}) is False
    assert s.actions_match({"seat": {"row": 1}}, {"seat": 1}) is False
    assert s.actions_match({"k": "v"}, {}) is False


def test_scalar_rules() -> None:
    assert s.actions_match({"v": 100.0}, {"v": 100.0009}) is True  # rel 1e-5
    assert s.actions_match({"v": 100.0}, {"v": 100.01}) is False
    assert s.actions_match({"v": "Hello, World"}, {"v": "hello world"}) is False
    assert s.actions_match({"v": "Hello, World"}, {"v": "hello world"}, ignore_capitalization=True, ignore_punctuation=True) is True
    assert s.actions_match({"v": "Hello"}, {"v": "hello"}, ignore_capitalization=True) is True
    assert s.actions_match({"v": None}, {"v": None}) is True
