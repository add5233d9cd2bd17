"""Text of the small per-scenario and run artifacts (§14.4, §14.6, §14.7, §14.9).

Pure formatting over plain data; the runner decides whether and where each file is written.
Segments are ``{"role": "user"|"agent", "start": float, "end": float, "text": str}`` with times
in seconds since the conversation start.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from scoring.core.aggregate import scenario_label
from scoring.core.csv_cells import safe_cell

RULE = "=" * 80
STOP_DETECTION_DELAY_S = 0.3  # the sender's stop-detection lag, removed from every segment end


def adjust_segments(segments: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """§7.2: end - 0.3 s unless that would not leave the end after the start; sorted by start."""
    adjusted = []
    for segment in segments:
        start, end = float(segment["start"]), float(segment["end"])
        new_end = end - STOP_DETECTION_DELAY_S
        if new_end <= start:
            new_end = end  # too short to adjust: raw times
        adjusted.append({**segment, "start": start, "end": new_end})
    return sorted(adjusted, key=lambda s: s["start"])


def format_conversation_log_header(start_time_iso: str) -> str:
    """The header alone: written when the attempt starts (§3.2 step 1), kept by the full file."""
    return "\n".join(["RTVI Evaluation Bridge - Conversation Log", RULE, f"Start Time: {start_time_iso}", RULE, ""]) + "\n"


def format_conversation_log(
    segments: Iterable[Mapping[str, Any]], start_time_iso: str, end_time_iso: str, stop_reason: str
) -> str:
    """``conversation_log.txt``; only the header when there is no segment."""
    lines = format_conversation_log_header(start_time_iso).splitlines()
    ordered = adjust_segments(segments)
    if not ordered:
        return "\n".join(lines) + "\n"
    last_user_end: float | None = None
    for segment in ordered:
        start, end = segment["start"], segment["end"]
        role = str(segment["role"])
        lines.append(f"[{start:7.3f}s - {end:7.3f}s] ({end - start:.3f}s) {role.upper()}: {segment['text']}")
        if role == "agent" and last_user_end is not None:
            # Display only (may be negative on barge-in); the metric is measured live (§8).
            lines.append(f"  → Response latency: {(start - last_user_end) * 1000:.1f}ms")
        elif role == "user":
            last_user_end = end
    lines += ["", "", RULE, f"End time: {end_time_iso}", f"Stop reason: {stop_reason}", RULE]
    return "\n".join(lines) + "\n"


def seglst_entries(segments: Iterable[Mapping[str, Any]], session_id: str) -> list[dict[str, Any]]:
    """``conversation_log.seglst.json`` entries (adjusted times, sorted by start)."""
    return [
        {
            "session_id": session_id,
            "words": segment["text"],
            "speaker": segment["role"],
            "start_time": segment["start"],
            "end_time": segment["end"],
        }
        for segment in adjust_segments(segments)
    ]


def _csv_text(value: Any) -> str:
    return '"' + safe_cell("" if value is None else str(value)).replace('"', '""') + '"'


def format_latencies_csv(results: Iterable[Mapping[str, Any]]) -> str:
    """``all_latencies.csv`` from metrics dicts in queue order (one row per latency)."""
    lines = ["Scenario,User_Transcript,Agent_Transcript,Latency_ms"]
    for metrics in results:
        name = scenario_label(metrics)
        for latency in metrics.get("latencies") or []:
            lines.append(
                f"{_csv_text(name)},{_csv_text(latency.get('user_transcript'))},"
                f"{_csv_text(latency.get('agent_transcript'))},{float(latency['latency_ms']):.1f}"
            )
    return "\n".join(lines) + "\n"


def final_agent_response(summary: Mapping[str, Any] | None, final_responses: Iterable[str]) -> list[Any]:
    """``final_agent_response.json`` content: the pulled actions stamped with a side, else the
    captured ``<final_response>`` payloads (parsed JSON, or wrapped as a message)."""
    if isinstance(summary, Mapping) and "actions" in summary:
        # A record's own side (user-side records carry "user") wins over the default.
        records = summary["actions"] if isinstance(summary["actions"], list) else []
        # A protocol bot may report anything: records that are not objects are dropped.
        return [{"actions": [{"side": "agent", **record} for record in records if isinstance(record, Mapping)]}]
    payloads: list[Any] = []
    for text in final_responses:
        try:
            payloads.append(json.loads(text))
        except ValueError:
            payloads.append({"message": text})
    return payloads


def format_final_db_hash_txt(db_hash: str | None, user_db_hash: str | None) -> str | None:
    """``final_scenario_db_hash.txt``; None when both hashes are null (the file is not written)."""
    lines = []
    if db_hash is not None:
        lines.append(f"db_hash: {db_hash}")
    if user_db_hash is not None:
        lines.append(f"user_db_hash: {user_db_hash}")
    return "\n".join(lines) + "\n" if lines else None
