"""User -> agent response latency (harness.md §8).

The reference point is the user's last *speech* frame (not the stopped-speaking event, which lags
it by the sender's silence detection); the measurement ends at the agent's first speech frame.
Times are bridge receive times on a monotonic clock, passed in by the caller. The statistics over
the records are scoring's (``scoring.core.latency``), computed once from ``metrics.json``'s list.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LatencyMeter:
    """Arms on the user's stop, records at the agent's first speech frame after it.

    Two guards keep figures honest on a loaded machine: a user turn that ends while the agent is
    still talking (the agent answered mid-utterance, or a split turn) is measured to the agent's
    *next* turn, not to the frame already in flight (that gave 200 ms "handoffs"); and the
    reference is the last speech frame of *this* user turn, or its stop event when none of its
    frames counted as speech, never a frame left over from an earlier turn."""

    records: list[dict] = field(default_factory=list)
    _user_last_speech: float | None = None
    _last_user_text: str = ""
    _waiting: bool = False
    _agent_talking: bool = False
    _answer_pending: bool = False
    """Armed while the agent was talking: only its next turn can answer."""

    def user_turn_started(self) -> None:
        self._user_last_speech = None

    def user_speech(self, now: float) -> None:
        """An inbound user frame classified as speech (text modality: the user's stop event)."""
        self._user_last_speech = now

    def user_turn_ended(self, text: str, now: float | None = None) -> None:
        """The user's bot-stopped-speaking: arm the measurement."""
        self._last_user_text = text
        if self._user_last_speech is None and now is not None:
            self._user_last_speech = now
        self._waiting = True
        self._answer_pending = self._agent_talking

    def agent_turn_started(self) -> None:
        self._agent_talking = True
        self._answer_pending = False

    def agent_speech(self, now: float) -> dict | None:
        """An inbound agent speech frame (text modality: its started-speaking); records once."""
        if not self._waiting or self._answer_pending or self._user_last_speech is None:
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
        self._agent_talking = False
        if self.records and not self.records[-1]["agent_transcript"]:
            self.records[-1]["agent_transcript"] = text
