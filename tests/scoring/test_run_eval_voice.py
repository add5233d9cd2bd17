"""Voice modality through run_eval: the five hand-authored seeds over real offline speech
(Piper TTS -> 16 kHz relay -> Silero VAD -> pocketsphinx ASR) land on their gold hashes with a
clean exit, and the summary carries latency figures and key-entity accuracy."""
from __future__ import annotations

import json
import wave
from pathlib import Path

import pytest

from scoring.run_options import RunOptions
from scoring.runner import run_evaluation

SEEDS = ["eva_airline__voluntary_date_change", "eva_airline__irrops_cancellation",
         "eva_airline__missed_flight_standby", "eva_airline__cancellation_refund",
         "eva_airline__escalation_edge_case"]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
async def test_five_seeds_in_voice_reach_gold_with_latency(tmp_path: Path) -> None:
    options = RunOptions(scenarios=SEEDS, modality="voice", concurrency=3, output_dir=str(tmp_path),
                         duration=300, inactivity_timeout=60.0, max_auto_retries=0)
    report = await run_evaluation(options)
    for metrics in report.metrics:
        assert metrics["db_state_match"] is True, metrics["scenario_name"]
        assert metrics["clean_exit"] is True and metrics["stop_reason"] == "[EXIT]", metrics["scenario_name"]
        assert metrics["latency_stats"]["count"] > 0
        assert metrics["latency_stats"]["p95_ms"] >= metrics["latency_stats"]["p50_ms"] > 0
        assert "key_entity_accuracy" in metrics
        scenario_dir = Path(metrics["scenario_directory"])
        with wave.open(str(scenario_dir / "conversation_log.wav")) as wav:
            assert wav.getnchannels() == 2 and wav.getframerate() == 16000 and wav.getnframes() > 16000
    summary = report.summary_text
    assert "Overall Success Rate: 100.00% (5/5 scenarios" in summary
    overall = summary.split("Overall Latency Statistics:")[1]
    assert "Total Measurements: 0" not in overall and "P95: -1.0ms" not in overall
    assert "Key-entity accuracy (user_to_agent):" in summary
    rows = json.loads((report.session_dir / "all_latencies.csv").read_text().splitlines()[0].join(['"', '"']))
    assert rows == "Scenario,User_Transcript,Agent_Transcript,Latency_ms"
