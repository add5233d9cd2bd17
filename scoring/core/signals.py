"""Per-scenario verdicts: end-of-conversation policy (§9.5), the six signals and the composite
(§11.1, §11.4), agent-turn counting and the stall rule (§10), action-list matching (§11.3).

One function per rule so that the live runner, resume classification, ``check_resume`` and the
aggregator all read a scenario the same way.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from voice.bridge import stop_reasons

# --- names ------------------------------------------------------------------------------------

SIGNAL_ACTION_MATCH = "is_action_match"
SIGNAL_DB_STATE = "db_state_match"
SIGNAL_DB_ASSERTION = "db_state_assertion"
SIGNAL_NL_ASSERTION = "nl_assertion"
SIGNAL_JUDGE_PASSED = "judge_passed"
SIGNAL_CLEAN_EXIT = "clean_exit"
# Order matters: success_breakdown lists names in this order (§11.1).
SIGNAL_NAMES: tuple[str, ...] = (
    SIGNAL_ACTION_MATCH,
    SIGNAL_DB_STATE,
    SIGNAL_DB_ASSERTION,
    SIGNAL_NL_ASSERTION,
    SIGNAL_JUDGE_PASSED,
    SIGNAL_CLEAN_EXIT,
)
# metrics.json field that carries each signal's raw value.
SIGNAL_FIELDS: dict[str, str] = {
    SIGNAL_ACTION_MATCH: "is_action_match",
    SIGNAL_DB_STATE: "db_state_match",
    SIGNAL_DB_ASSERTION: "db_state_assertion_pass_rate",
    SIGNAL_NL_ASSERTION: "nl_assertion_pass_rate",
    SIGNAL_JUDGE_PASSED: "judge_passed",
    SIGNAL_CLEAN_EXIT: "clean_exit",
}

POLICY_TOOL_ONLY = "tool-only"
POLICY_VALID_TERMINAL_STATE = "valid-terminal-state"
POLICIES: tuple[str, ...] = (POLICY_TOOL_ONLY, POLICY_VALID_TERMINAL_STATE)

# The bridge's stop reasons under the names scoring has always used (one home: voice.bridge).
STOP_EXIT = stop_reasons.EXIT
STOP_SIMULATOR_EXIT = stop_reasons.SIMULATOR_EXIT
STOP_INACTIVITY_TIMEOUT = stop_reasons.INACTIVITY_TIMEOUT
STOP_TIMEOUT = stop_reasons.TIMEOUT
STOP_DISCONNECTED = stop_reasons.DISCONNECTED
STOP_REASONS = stop_reasons.STOP_REASONS

END_AGENT_TOOL = "agent_end_conversation_tool"
END_AGENT_TOOL_MISSING = "agent_end_conversation_tool_missing"
END_SIMULATOR = "simulator_reported_end"
END_INACTIVITY_AFTER_USER = "inactivity_timeout_after_user_final_turn"
END_NO_EVIDENCE = "no_valid_terminal_evidence"
END_DISCONNECTED = "connection_lost"
"""[project decision] A lost connection is never a clean exit, even if an exit tag raced it (§9.1)."""

NOT_APPLICABLE = "N/A"
Verdict = bool | None


# --- §9.5 ---------------------------------------------------------------------------------------


def end_verdict(
    policy: str,
    *,
    end_conversation_tool_called: bool,
    simulator_end_reported: bool,
    stop_reason: str,
    last_speaker: str | None,
) -> tuple[bool, str]:
    """``(clean_exit, conversation_end_reason)`` under ``policy``; rows evaluated top to bottom."""
    if policy not in POLICIES:
        raise ValueError(f"unknown conversation_end_policy {policy!r}; expected one of {POLICIES}")
    if stop_reason == STOP_DISCONNECTED:
        return False, END_DISCONNECTED
    if end_conversation_tool_called:
        return True, END_AGENT_TOOL
    if policy == POLICY_TOOL_ONLY:
        return False, END_AGENT_TOOL_MISSING
    if simulator_end_reported:
        return True, END_SIMULATOR
    if stop_reason == STOP_INACTIVITY_TIMEOUT and last_speaker == "user":
        return True, END_INACTIVITY_AFTER_USER
    return False, END_NO_EVIDENCE


# --- §11.1 / §11.4 ------------------------------------------------------------------------------


def normalize_verdict(value: Any) -> Verdict:
    """null / "N/A" / unknown -> None; bool -> itself; number -> value >= 1.0 (the pass-rate gate)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value >= 1.0
    return None


def signal_verdicts(metrics: Mapping[str, Any]) -> dict[str, Verdict]:
    """The six normalized verdicts read from a metrics dict, in §11.1 order."""
    return {name: normalize_verdict(metrics.get(SIGNAL_FIELDS[name])) for name in SIGNAL_NAMES}


def success_breakdown(verdicts: Mapping[str, Verdict], success_signals: Iterable[str]) -> dict[str, list[str]]:
    """Bucket the signals by verdict and whitelist membership (§11.4)."""
    whitelist = list(success_signals)
    unknown = [name for name in whitelist if name not in SIGNAL_NAMES]
    if unknown:
        raise ValueError(f"unknown success signal(s) {unknown}; expected names from {SIGNAL_NAMES}")
    listed = set(whitelist)
    breakdown: dict[str, list[str]] = {"passed": [], "failed": [], "not_applicable": [], "excluded": []}
    for name in SIGNAL_NAMES:
        verdict = verdicts.get(name)
        if name not in listed:
            if verdict is not None:
                breakdown["excluded"].append(name)
        elif verdict is None:
            breakdown["not_applicable"].append(name)
        else:
            breakdown["passed" if verdict else "failed"].append(name)
    return breakdown


def is_successful(breakdown: Mapping[str, list[str]]) -> bool | Literal["N/A"]:
    """Strict AND of the applicable whitelisted verdicts; "N/A" when none applied."""
    if not breakdown.get("passed") and not breakdown.get("failed"):
        return NOT_APPLICABLE
    return not breakdown.get("failed")


def is_task_successful(breakdown: Mapping[str, list[str]]) -> bool:
    """Success ignoring ``clean_exit``: only the other failures count."""
    return not [name for name in breakdown.get("failed", []) if name != SIGNAL_CLEAN_EXIT]


def composite_fields(
    verdicts: Mapping[str, Verdict], success_signals: Iterable[str], *, insufficient_agent_turns: bool = False
) -> dict[str, Any]:
    """``success_breakdown``, ``is_successful`` and (when a bool) ``is_task_successful``, with the
    stall override of §10.2 applied last."""
    breakdown = success_breakdown(verdicts, success_signals)
    fields: dict[str, Any] = {"success_breakdown": breakdown, "is_successful": is_successful(breakdown)}
    if isinstance(fields["is_successful"], bool):
        fields["is_task_successful"] = is_task_successful(breakdown)
    if insufficient_agent_turns:
        fields["is_successful"] = False
        fields["is_task_successful"] = False
    return fields


# --- §10 ----------------------------------------------------------------------------------------

AGENT_CONTEXT_FILE = Path("bot_logs_agent") / "llm_context.json"


def agent_turn_count(metrics: Mapping[str, Any], scenario_dir: Path | None) -> int | None:
    """Agent LLM responses for the stall rule (§10.1 resolution order); None when unknown."""
    n_calls = _agent_n_calls(metrics)
    if n_calls is not None and n_calls > 0:
        return n_calls
    if scenario_dir is not None:
        from_context = _assistant_messages(Path(scenario_dir) / AGENT_CONTEXT_FILE)
        if from_context is not None:
            return from_context
    return n_calls


def _agent_n_calls(metrics: Mapping[str, Any]) -> int | None:
    usage = metrics.get("token_usage")
    agent = usage.get("agent") if isinstance(usage, Mapping) else None
    n_calls = agent.get("n_calls") if isinstance(agent, Mapping) else None
    if isinstance(n_calls, int) and not isinstance(n_calls, bool):
        return n_calls
    return None


def _assistant_messages(path: Path) -> int | None:
    try:
        context = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(context, Mapping):  # tolerate {"messages": [...]} as well as a bare list
        context = context.get("messages")
    if not isinstance(context, list):
        return None
    return sum(1 for message in context if isinstance(message, Mapping) and message.get("role") == "assistant")


def is_stalled(count: int | None, min_agent_turns: int) -> bool:
    """The stall rule: enabled (min > 0), count known, and count below the floor."""
    return min_agent_turns > 0 and count is not None and count < min_agent_turns


# --- §11.3 --------------------------------------------------------------------------------------

REFERENCE_ANSWER_FILE = Path("scenario_config") / "reference_answer.json"
PREDICTION_FILE = Path("final_agent_response.json")
_PUNCTUATION = re.compile(r"[^\w\s]")


def is_action_match(
    reference_path: Path,
    prediction_path: Path,
    *,
    disallow_extra_items: bool = False,
    ignore_capitalization: bool = False,
    ignore_punctuation: bool = False,
) -> bool | Literal["N/A"]:
    """Action-list match from the two files: "N/A" without a reference, False without a
    (readable) prediction. An unreadable reference is a broken scenario and raises."""
    if not Path(reference_path).exists():
        return NOT_APPLICABLE
    reference = json.loads(Path(reference_path).read_text(encoding="utf-8"))
    try:
        prediction = json.loads(Path(prediction_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return actions_match(
        reference,
        prediction,
        disallow_extra_items=disallow_extra_items,
        ignore_capitalization=ignore_capitalization,
        ignore_punctuation=ignore_punctuation,
    )


def shape_normalize(payload: Any) -> Any:
    """A list holding exactly one dict becomes that dict (also used for the judge's input)."""
    if isinstance(payload, list) and len(payload) == 1 and isinstance(payload[0], dict):
        return payload[0]
    return payload


def actions_match(
    reference: Any,
    prediction: Any,
    *,
    disallow_extra_items: bool = False,
    ignore_capitalization: bool = False,
    ignore_punctuation: bool = False,
) -> bool:
    """Compare two payloads per §11.3: each reference item matches a distinct prediction item."""
    ref_items = _as_items(reference)
    pred_items = _as_items(prediction)
    if len(ref_items) == 1 and len(pred_items) > 1:
        pred_items = pred_items[-1:]  # the final response is the one that counts
    if disallow_extra_items and len(ref_items) != len(pred_items):
        return False
    flags = (ignore_capitalization, ignore_punctuation)
    return _match_all(ref_items, pred_items, flags)


def _as_items(payload: Any) -> list[Any]:
    payload = shape_normalize(payload)
    return payload if isinstance(payload, list) else [payload]


def _match_all(reference: list[Any], prediction: list[Any], flags: tuple[bool, bool]) -> bool:
    # Greedy: each reference item takes the first unused prediction item that matches.
    used: set[int] = set()
    for ref_item in reference:
        for index, pred_item in enumerate(prediction):
            if index not in used and _values_match(ref_item, pred_item, flags):
                used.add(index)
                break
        else:
            return False
    return True


def _values_match(reference: Any, prediction: Any, flags: tuple[bool, bool]) -> bool:
    if isinstance(reference, dict):
        if not isinstance(prediction, dict):
            return False
        return all(key in prediction and _values_match(value, prediction[key], flags)
                   for key, value in reference.items())
    if isinstance(reference, list):
        return isinstance(prediction, list) and _match_all(reference, prediction, flags)
    return _scalars_match(reference, prediction, flags)


def _scalars_match(reference: Any, prediction: Any, flags: tuple[bool, bool]) -> bool:
    ref_number, pred_number = _as_float(reference), _as_float(prediction)
    if ref_number is not None and pred_number is not None:
        # numpy.isclose defaults (rtol 1e-5, atol 1e-8), tolerance scaled by the reference;
        # the equality test lets inf match inf.
        return ref_number == pred_number or abs(pred_number - ref_number) <= 1e-8 + 1e-5 * abs(ref_number)
    if isinstance(prediction, (dict, list)):
        return False
    ignore_case, ignore_punct = flags
    return _clean(str(reference), ignore_case, ignore_punct) == _clean(str(prediction), ignore_case, ignore_punct)


def _as_float(value: Any) -> float | None:
    if isinstance(value, (dict, list)):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _clean(text: str, ignore_case: bool, ignore_punct: bool) -> str:
    if ignore_case:
        text = text.lower()
    if ignore_punct:
        text = _PUNCTUATION.sub("", text)
    return text
