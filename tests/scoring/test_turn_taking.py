"""Turn-taking figures on constructed timelines whose answers are known by hand."""
from __future__ import annotations

import pytest

from scoring.core.turn_taking import turn_taking


def test_gaps_labels_and_eva_timing_score() -> None:
    # Greeting, then four caller turns answered after 100 ms, 500 ms, 4.5 s and -300 ms.
    timeline = {
        "agent": [[0.0, 2.0], [4.1, 6.0], [9.5, 11.0], [16.5, 18.0], [21.7, 23.0]],
        "user": [[2.5, 4.0], [7.0, 9.0], [11.5, 12.0], [20.0, 22.0]],
    }
    result = turn_taking(timeline)
    assert [h["gap_ms"] for h in result["handoffs"]] == [100.0, 500.0, 4500.0, -300.0]
    assert [h["label"] for h in result["handoffs"]] == ["early", "on_time", "late", "overlap"]
    assert result["timing_counts"] == {"overlap": 1, "early": 1, "on_time": 1, "late": 1}
    # eva: early/overlap -1, on time 0, late +1; aggregated as the mean of absolute ratings.
    assert result["timing_abs_mean"] == 0.75
    assert result["timing_score"] == 0.25
    assert result["timing_mean"] == -0.25  # signed: this agent leans early
    stats = result["response_gap_stats"]
    assert stats["count"] == 4 and stats["min_ms"] == -300.0 and stats["max_ms"] == 4500.0
    assert stats["mean_ms"] == pytest.approx(1200.0)


def test_label_edges_follow_eva() -> None:
    def label(gap_s: float) -> str:
        return turn_taking({"agent": [[5.0 + gap_s, 6.0 + gap_s]], "user": [[1.0, 5.0]]})["handoffs"][0]["label"]

    assert label(0.0) == "early" and label(0.1999) == "early" and label(0.2) == "on_time"
    assert label(3.9999) == "on_time" and label(4.0) == "late" and label(-0.01) == "overlap"


def test_all_on_time_scores_one_and_no_handoff_scores_none() -> None:
    on_time = turn_taking({"agent": [[0, 1], [2.0, 3]], "user": [[1.2, 1.5]]})
    assert on_time["timing_score"] == 1.0 and on_time["timing_counts"]["on_time"] == 1
    greeting_only = turn_taking({"agent": [[0.0, 3.0]], "user": []})
    assert greeting_only["handoffs"] == [] and greeting_only["timing_score"] is None
    assert greeting_only["response_gap_stats"]["count"] == 0


def test_overlaps_are_counted_and_summed() -> None:
    result = turn_taking({"agent": [[0, 4], [6, 10]], "user": [[3, 5], [9, 9.5], [9.8, 12]]})
    # 3-4, 9-9.5 and 9.8-10 overlap.
    assert result["overlap_count"] == 3
    assert result["overlap_s"] == pytest.approx(1.0 + 0.5 + 0.2)


def test_an_agent_that_yields_quickly() -> None:
    # The agent reads a long list from 10 s; the caller cuts in at 12 s and talks until 14 s;
    # the agent's audio stops 0.4 s after the caller started, then it answers at 14.8 s.
    result = turn_taking({"agent": [[10.0, 12.4], [14.8, 16.0]], "user": [[12.0, 14.0]]})
    assert result["user_interruptions"] == 1
    assert result["interruptions"][0]["yield_ms"] == pytest.approx(400.0)
    assert result["yield_stats"]["p50_ms"] == pytest.approx(400.0)
    assert result["agent_talk_over"] == 0
    assert [h["gap_ms"] for h in result["handoffs"]] == [800.0]


def test_an_agent_that_talks_through_the_interruption() -> None:
    # Sentence pauses under 0.5 s do not count as stopping: the agent talks on to 20 s.
    result = turn_taking({"agent": [[10.0, 15.0], [15.3, 20.0]], "user": [[12.0, 13.0]]})
    assert result["user_interruptions"] == 1
    assert result["interruptions"][0]["yield_ms"] == pytest.approx(8000.0)
    # The caller's interjection ended while the agent still held the floor: no handoff.
    assert result["handoffs"] == []
    # A pause of 0.5 s or more is a stop: the same agent then yields at 15 s.
    paused = turn_taking({"agent": [[10.0, 15.0], [15.6, 20.0]], "user": [[12.0, 13.0]]})
    assert paused["interruptions"][0]["yield_ms"] == pytest.approx(3000.0)


def test_one_interruption_per_agent_spell() -> None:
    result = turn_taking({"agent": [[0.0, 10.0]], "user": [[2.0, 2.5], [4.0, 4.5], [6.0, 6.5]]})
    assert result["user_interruptions"] == 1 and result["interruptions"][0]["at_s"] == 2.0


def test_agent_talk_over_is_starting_while_the_caller_talks() -> None:
    result = turn_taking({"agent": [[0, 2], [5.0, 8.0]], "user": [[3.0, 6.0]]})
    assert result["agent_talk_over"] == 1 and result["talk_over"][0]["at_s"] == 5.0
    assert result["handoffs"][0]["label"] == "overlap" and result["handoffs"][0]["gap_ms"] == -1000.0
    assert result["user_interruptions"] == 0  # the caller spoke first


def test_share_of_silence_uses_the_whole_conversation() -> None:
    timeline = {"agent": [[0.0, 3.0], [8.0, 10.0]], "user": [[4.0, 7.0], [9.0, 11.0]]}
    # Speech covers 0-3, 4-7, 8-11: 9 s of 20 s.
    assert turn_taking(timeline, duration_s=20.0)["silence_share"] == pytest.approx(0.55)
    assert turn_taking(timeline)["silence_share"] == pytest.approx(2.0 / 11.0, abs=1e-4)  # up to the last word


def test_speaking_rate_from_turn_text_and_speech_time() -> None:
    turns = [
        {"role": "agent", "text": "Thank you for calling. How can I help you today?"},  # 10 words
        {"role": "user", "text": "I'd like to change my flight, please."},  # 7 words
        {"role": "agent", "text": "Of course. Could you spell your confirmation number for me?"},  # 10 words
    ]
    timeline = {"agent": [[0.0, 4.0], [8.0, 12.0]], "user": [[5.0, 7.8]]}
    rates = turn_taking(timeline, turns)["words_per_minute"]
    assert rates["agent"] == pytest.approx(150.0)
    assert rates["user"] == pytest.approx(150.0)
    assert turn_taking(timeline)["words_per_minute"] == {"agent": None, "user": None}


def test_input_is_normalised_and_bad_segments_refused() -> None:
    messy = turn_taking({"agent": [[5, 6], [0, 2], [1.5, 3]], "user": [[3.5, 4.5]]})
    assert messy["speech_s"]["agent"] == pytest.approx(4.0)
    assert [h["gap_ms"] for h in messy["handoffs"]] == [500.0]
    with pytest.raises(ValueError, match="forward interval"):
        turn_taking({"agent": [[3.0, 2.0]], "user": []})
    empty = turn_taking({})
    assert empty["duration_s"] == 0.0 and empty["silence_share"] is None and empty["overlap_count"] == 0
