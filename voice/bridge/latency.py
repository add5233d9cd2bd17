"""User -> agent response latency (harness.md §8).

The reference point is the user's last *speech* frame (not the stopped-speaking event, which lags
it by the sender's silence detection); the measurement ends at the agent's first speech frame.
Times are bridge receive times on a monotonic clock, passed in by the caller.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LatencyMeter:
    records: list[dict] = field(default_factory=list)
    _user_last_speech: float | None = None
    _last_user_text: str = ""
    _waiting: bool = False

    def user_speech(self, now: float) -> None:
        """An inbound user frame classified as speech (text modality: the user's stop event)."""
        self._user_last_speech = now

    def user_turn_ended(self, text: str) -> None:
        """The user's bot-stopped-speaking: arm the measurement."""
        self._last_user_text = text
        self._waiting = True

    def agent_speech(self, now: float) -> dict | None:
        """An inbound agent speech frame (text modality: its started-speaking); records once."""
        if not self._waiting or self._user_last_speech is None:
            return None
        record = {
            "user_transcript": self._last_user_text,
            "agent_transcript": "",
            "latency_ms": (now - self._user_last_speech) * 1000.0,
        }
        self.records.append(record)
        self._waiting = False
        return record

    def agent_turn_ended(self, text: str) -> None:
        if self.records and not self.records[-1]["agent_transcript"]:
            self.records[-1]["agent_transcript"] = text


def latency_stats(values: list[float]) -> dict:
    """count, mean, p50 = sorted[n//2], p95 = sorted[floor(0.95 n)], min, max; zeros when empty."""
    if not values:
        return {"count": 0, "mean_ms": 0.0, "p50_ms": 0.0, "p95_ms": 0.0, "min_ms": 0.0, "max_ms": 0.0}
    ordered = sorted(values)
    n = len(ordered)
    return {
        "count": n,
        "mean_ms": sum(ordered) / n,
        "p50_ms": ordered[n // 2],
        "p95_ms": ordered[min(n - 1, int(n * 0.95))],
        "min_ms": ordered[0],
        "max_ms": ordered[-1],
    }
