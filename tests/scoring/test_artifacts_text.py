"""§14.4, §14.6, §14.7, §14.9 artifact text."""
from __future__ import annotations

from scoring.core.artifacts_text import (
    adjust_segments,
    final_agent_response,
    format_conversation_log,
    format_final_db_hash_txt,
    format_latencies_csv,
    seglst_entries,
)

RULE = "=" * 80
SEGMENTS = [
    {"role": "agent", "start": 3.0, "end": 6.5, "text": "Sure, one moment."},
    {"role": "user", "start": 0.5, "end": 2.8, "text": "Hi, I need to change my flight."},
    {"role": "agent", "start": 6.6, "end": 6.8, "text": "[INTERRUPTED]"},  # too short to adjust
    {"role": "user", "start": 6.55, "end": 8.0, "text": "Thanks"},
]


def test_adjustment_and_sort() -> None:
    adjusted = adjust_segments(SEGMENTS)
    assert [(s["start"], round(s["end"], 6)) for s in adjusted] == [(0.5, 2.5), (3.0, 6.2), (6.55, 7.7), (6.6, 6.8)]


def test_conversation_log_exact() -> None:
    text = format_conversation_log(SEGMENTS, "2026-03-17T10:00:00.000001", "2026-03-17T10:00:09.5", "[EXIT]")
    assert text == (
        "RTVI Evaluation Bridge - Conversation Log\n"
        f"{RULE}\n"
        "Start Time: 2026-03-17T10:00:00.000001\n"
        f"{RULE}\n"
        "\n"
        "[  0.500s -   2.500s] (2.000s) USER: Hi, I need to change my flight.\n"
        "[  3.000s -   6.200s] (3.200s) AGENT: Sure, one moment.\n"
        "  → Response latency: 500.0ms\n"
        "[  6.550s -   7.700s] (1.150s) USER: Thanks\n"
        "[  6.600s -   6.800s] (0.200s) AGENT: [INTERRUPTED]\n"
        "  → Response latency: -1100.0ms\n"
        "\n"
        "\n"
        f"{RULE}\n"
        "End time: 2026-03-17T10:00:09.5\n"
        "Stop reason: [EXIT]\n"
        f"{RULE}\n"
    )


def test_no_latency_line_before_first_user_segment() -> None:
    text = format_conversation_log([{"role": "agent", "start": 0.0, "end": 1.0, "text": "Hello"}], "s", "e", "[TIMEOUT]")
    assert "Response latency" not in text
    assert "[  0.000s -   0.700s] (0.700s) AGENT: Hello\n" in text


def test_empty_log_is_header_only() -> None:
    assert format_conversation_log([], "s", "e", "[DISCONNECTED]") == (
        f"RTVI Evaluation Bridge - Conversation Log\n{RULE}\nStart Time: s\n{RULE}\n\n"
    )


def test_seglst() -> None:
    entries = seglst_entries(SEGMENTS[:2], "eva_airline__1_1_2")
    assert entries == [
        {"session_id": "eva_airline__1_1_2", "words": "Hi, I need to change my flight.", "speaker": "user", "start_time": 0.5, "end_time": 2.5},
        {"session_id": "eva_airline__1_1_2", "words": "Sure, one moment.", "speaker": "agent", "start_time": 3.0, "end_time": 6.2},
    ]
    assert seglst_entries([], "x") == []


def test_latencies_csv() -> None:
    results = [
        {"scenario_name": "eva_airline__1_1_3", "latencies": [{"user_transcript": 'Hi, "quote"', "agent_transcript": "Sure", "latency_ms": 2345.64}]},
        {"scenario_name": "none", "latencies": []},
        {"scenario_name": "b", "latencies": [{"user_transcript": "x", "agent_transcript": "", "latency_ms": 7}]},
    ]
    assert format_latencies_csv(results) == (
        "Scenario,User_Transcript,Agent_Transcript,Latency_ms\n"
        '"eva_airline__1_1_3","Hi, ""quote""","Sure",2345.6\n'
        '"b","x","",7.0\n'
    )
    assert format_latencies_csv([]) == "Scenario,User_Transcript,Agent_Transcript,Latency_ms\n"


def test_final_db_hash_txt() -> None:
    assert format_final_db_hash_txt("aa", "bb") == "db_hash: aa\nuser_db_hash: bb\n"
    assert format_final_db_hash_txt(None, "bb") == "user_db_hash: bb\n"
    assert format_final_db_hash_txt("aa", None) == "db_hash: aa\n"
    assert format_final_db_hash_txt(None, None) is None


def test_final_agent_response() -> None:
    summary = {"actions": [{"action_type": "rebook"}, {"action_type": "x", "side": "user"}], "db_hash": "h"}
    assert final_agent_response(summary, ["ignored"]) == [
        {"actions": [{"side": "agent", "action_type": "rebook"}, {"side": "user", "action_type": "x"}]}
    ]
    assert final_agent_response({"actions": None}, []) == [{"actions": []}]
    assert final_agent_response(None, ['{"a": 1}', "plain text"]) == [{"a": 1}, {"message": "plain text"}]
    assert final_agent_response({}, []) == []


def test_final_agent_response_drops_records_that_are_not_objects() -> None:
    from scoring.core.artifacts_text import final_agent_response

    summary = {"actions": [{"action_type": "assign_seat"}, "garbage", 3, None, {"action_type": "x", "side": "user"}]}
    assert final_agent_response(summary, []) == [
        {"actions": [{"side": "agent", "action_type": "assign_seat"}, {"side": "user", "action_type": "x"}]}
    ]
    assert final_agent_response({"actions": "not a list"}, []) == [{"actions": []}]
