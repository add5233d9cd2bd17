"""§13 judge: request body, parsing, error mapping, NL verdicts, against a real local HTTP server."""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from scoring.core import judge as j
from scoring.runs.options import RunOptions
from tests.standins import ChatCompletionsStandIn

StandIn = ChatCompletionsStandIn


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    server = StandIn().start()
    yield server
    server.stop()


PREDICTION = [{"actions": [{"side": "agent", "action_type": "rebook", "new_flight": "FL_SK703_20260325"}]}]
AGENT_CONTEXT = [{"role": "system", "content": "You are an airline agent."}, {"role": "assistant", "content": "Hello"}]


def _config(url: str, api_key: str | None = None, **kwargs: Any) -> j.JudgeConfig:
    """The run options' judge defaults, with ``kwargs`` (JudgeConfig field names) changed."""
    flags = RunOptions(judge_url=url, judge_model="judge-model",
                       **{f"judge_{name}": value for name, value in kwargs.items()})
    return j.JudgeConfig.from_flags(vars(flags), api_key=api_key)


def test_request_body_and_plain_json(stand_in: StandIn) -> None:
    stand_in.reply_content(json.dumps({"score": 0.95, "reason": "Rebooked correctly."}))
    result = j.run_judge(_config(stand_in.url, api_key="sekret"), prediction=PREDICTION, agent_context=AGENT_CONTEXT)
    assert result == {
        "score": 0.95,
        "reason": "Rebooked correctly.",
        "judge_input": {"system_prompt": j.SYSTEM_PROMPT, "user_content": result["judge_input"]["user_content"]},
    }
    request = stand_in.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sekret"
    body = request["body"]
    assert body["model"] == "judge-model"
    assert body["messages"] == [{"role": "system", "content": j.SYSTEM_PROMPT}, {"role": "user", "content": result["judge_input"]["user_content"]}]
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["seed"]) == (100000, 1.0, 0.95, 42)
    assert body["chat_template_kwargs"] == {"enable_thinking": True}
    assert "thinking_token_budget" not in body


def test_thinking_budget_only_when_given_and_no_key_header(stand_in: StandIn) -> None:
    stand_in.reply_content('{"score": 1}')
    j.run_judge(_config(stand_in.url, thinking_token_budget=2048), prediction=PREDICTION)
    request = stand_in.requests[0]
    assert request["body"]["thinking_token_budget"] == 2048
    assert "Authorization" not in request["headers"]


def test_fenced_json_and_nl_verdict_normalization(stand_in: StandIn) -> None:
    content = (
        "Some thoughts first.\n```json\n"
        + json.dumps({
            "score": 0.5,
            "reason": "Half right.",
            "nl_assertion_verdicts": [
                {"index": 1, "passed": True, "reason": "ok"},
                {"index": 2, "passed": "yes", "reason": "not a bool"},
                {"index": 9, "passed": True, "reason": "out of range"},
                {"index": 1.0, "passed": True, "reason": "float index"},
            ],
        })
        + "\n```\nDone."
    )
    stand_in.reply_content(content)
    assertions = ["The agent confirmed the new date.", "The agent offered a window seat.", "The agent said goodbye."]
    result = j.run_judge(_config(stand_in.url), prediction=PREDICTION, nl_assertions=assertions)
    assert result["score"] == 0.5
    assert result["nl_assertion_verdicts"] == [
        {"index": 1, "assertion": assertions[0], "passed": True, "reason": "ok"},
        {"index": 2, "assertion": assertions[1], "passed": False, "reason": j.MISSING_VERDICT_REASON},
        {"index": 3, "assertion": assertions[2], "passed": False, "reason": j.MISSING_VERDICT_REASON},
    ]
    assert (result["nl_assertion_pass_count"], result["nl_assertion_total"]) == (1, 3)
    assert result["nl_assertion_pass_rate"] == pytest.approx(1 / 3)
    assert "<nl_assertions>\n1. The agent confirmed the new date.\n2. The agent offered a window seat.\n3. The agent said goodbye.\n</nl_assertions>" in result["judge_input"]["user_content"]


def test_http_error_maps_to_zero(stand_in: StandIn) -> None:
    stand_in.replies.append((503, b'{"error": "overloaded"}'))
    result = j.run_judge(_config(stand_in.url), prediction=PREDICTION, nl_assertions=["a"])
    assert result["score"] == 0.0
    assert result["reason"].startswith("Error: HTTP 503") and "overloaded" in result["reason"]
    assert result["nl_assertion_verdicts"] == [{"index": 1, "assertion": "a", "passed": False, "reason": result["reason"]}]
    assert result["nl_assertion_pass_rate"] == 0.0


@pytest.mark.parametrize(
    "reply",
    [
        (200, b"not json at all"),
        (200, json.dumps({"choices": []}).encode()),
        (200, json.dumps({"choices": [{"message": {"content": None}}]}).encode()),
        (200, json.dumps({"choices": [{"message": {"content": "I think it is good."}}]}).encode()),
        (200, json.dumps({"choices": [{"message": {"content": '{"reason": "no score"}'}}]}).encode()),
    ],
)
def test_bad_responses_map_to_error(stand_in: StandIn, reply: tuple[int, bytes]) -> None:
    stand_in.replies.append(reply)
    result = j.run_judge(_config(stand_in.url), prediction=PREDICTION)
    assert result["score"] == 0.0 and result["reason"].startswith("Error: ")


def test_unreachable_endpoint_maps_to_error() -> None:
    server = StandIn()  # never started: closing the socket leaves a port that refuses connections
    url = server.url
    server.server.server_close()
    result = j.run_judge(_config(url, timeout=2.0), prediction=PREDICTION)
    assert result["score"] == 0.0 and result["reason"].startswith("Error: ")


def test_no_evidence_short_circuits(stand_in: StandIn) -> None:
    result = j.run_judge(_config(stand_in.url), reference=[{"actions": []}], turns=[{"role": "user", "text": "hi"}], nl_assertions=["x", "y"])
    assert stand_in.requests == []
    assert result["score"] == 0.0 and result["reason"] == j.NO_EVIDENCE_REASON
    assert [v["passed"] for v in result["nl_assertion_verdicts"]] == [False, False]
    assert result["nl_assertion_verdicts"][0]["reason"] == j.NO_EVIDENCE_REASON


def test_conversation_counts_as_evidence_when_included(stand_in: StandIn) -> None:
    stand_in.reply_content('{"score": 0.2, "reason": ""}')
    result = j.run_judge(_config(stand_in.url, include_conversation=True), turns=[{"role": "user", "text": "hi"}, {"role": "agent", "text": "Hello"}])
    assert result["score"] == 0.2 and result["reason"] == ""
    assert result["judge_input"]["user_content"] == "<conversation>\n[user]: hi\n[agent]: Hello\n</conversation>"


# --- pure pieces --------------------------------------------------------------------------------


def test_user_content_order_and_shape_normalization() -> None:
    content = j.build_user_content(
        _config("http://unused", include_conversation=True),
        reference=[{"actions": [{"a": 1}]}],
        prediction=PREDICTION,
        turns=[{"role": "user", "text": "hi"}],
        nl_assertions=["n"],
        agent_context=AGENT_CONTEXT,
        user_context=[{"role": "user", "content": "u"}],
    )
    tags = ["reference", "prediction", "conversation", "nl_assertions", "agent_context_history", "user_context_history"]
    positions = [content.index(f"<{tag}>") for tag in tags]
    assert positions == sorted(positions)
    assert content.startswith('<reference>\n{\n  "actions": [\n    {\n      "a": 1\n    }\n  ]\n}\n</reference>\n\n<prediction>\n{\n')
    assert "\n</prediction>\n\n<conversation>\n[user]: hi\n</conversation>\n\n" in content
    # Conversation is left out without the flag; empty inputs are left out entirely.
    assert j.build_user_content(_config("u"), turns=[{"role": "user", "text": "hi"}], prediction=[], agent_context=[]) == ""


def test_compaction() -> None:
    messages = [{"role": "system", "content": "S" * 30}] + [{"role": "user", "content": f"m{i}", "parts": list(range(10))} for i in range(10)]
    messages[-1]["content"] = "x" * 25
    compacted = j.compact_context(messages, message_limit=3, system_string_limit=10, string_limit=20)
    assert len(compacted) == 4
    assert compacted[0]["content"] == "S" * 10 + "... [truncated 20 characters]"
    assert [m["content"] for m in compacted[1:3]] == ["m7", "m8"]
    assert compacted[3]["content"] == "x" * 20 + "... [truncated 5 characters]"
    assert compacted[1]["parts"] == [7, 8, 9]
    # Without a leading system message only the newest messages are kept.
    assert j.compact_context(messages[1:], message_limit=2, system_string_limit=10, string_limit=100)[0]["content"] == "m8"


def test_compaction_applied_only_with_flag() -> None:
    long_context = [{"role": "system", "content": "S" * 3000}]
    plain = j.build_user_content(_config("u"), agent_context=long_context)
    compact = j.build_user_content(_config("u", compact_context=True), agent_context=long_context)
    assert "S" * 3000 in plain and "[truncated 500 characters]" in compact
    custom = j.build_user_content(_config("u", compact_context=True, context_system_string_limit=100), agent_context=long_context)
    assert "[truncated 2900 characters]" in custom


def test_parse_three_steps() -> None:
    assert j.parse_judge_response(' {"score": 1, "reason": "r"} ') == {"score": 1, "reason": "r"}
    assert j.parse_judge_response('text ```\n{"score": 0.3}\n``` more ```json\n{"score": 0.9}\n```') == {"score": 0.3}
    assert j.parse_judge_response('```\n[1]\n```\n```json\n{"score": 0.9}\n```') == {"score": 0.9}
    assert j.parse_judge_response('Verdict: {"note": "x"} then {"score": 0.7, "reason": "ok"}.') == {"score": 0.7, "reason": "ok"}
    with pytest.raises(ValueError):
        j.parse_judge_response("no json here")
    with pytest.raises(ValueError):
        j.parse_judge_response('{"score": "high"} trailing')


def test_config_helpers() -> None:
    assert j.judge_enabled("http://x", "m") and not j.judge_enabled("", "m") and not j.judge_enabled("http://x", None)
    assert j.resolve_api_key("inline", environ={"JUDGE_API_KEY": "env"}) == "inline"
    assert j.resolve_api_key(None, environ={"JUDGE_API_KEY": "env"}) == "env"
    assert j.resolve_api_key(None, "OTHER", environ={"OTHER": "o"}) == "o"
    assert j.resolve_api_key(None, environ={}) is None
    assert j.judge_passed(0.9, 0.9) is True and j.judge_passed(0.89, 0.9) is False and j.judge_passed(1.0, None) is None


def test_system_prompt_covers_required_points() -> None:
    prompt = j.SYSTEM_PROMPT
    for needle in ("voice agent", "<reference>", "<prediction>", "<conversation>", "<nl_assertions>", "<agent_context_history>",
                   "<user_context_history>", 'side "agent"', 'side "user"', "without a \"side\"", "never be attributed to the agent",
                   "unnecessary", "independently", "at most 0.05", "end_conversation", "cost nothing", "Quote concrete evidence",
                   "Output ONLY", "nl_assertion_verdicts", "exactly one verdict per assertion"):
        assert needle in prompt, needle


def test_score_clamped(stand_in: StandIn) -> None:
    stand_in.reply_content('{"score": 7, "reason": "out of ten?"}')
    assert j.run_judge(_config(stand_in.url), prediction=PREDICTION)["score"] == 1.0
