"""User turns of a human call, built from the agent bot's own events (harness.md §7.3).

A browser sends no speaking events, so in voice modality the agent's ``user-started-speaking``,
final ``user-transcription`` and ``bot-started-speaking`` are translated into the user-side
events a passenger bot would have sent. The conversation bookkeeping then treats the human like
any other peer: one code path for turns, heard text and latency.

A person may start talking just before the agent does (over its greeting, say). The agent's
ASR then delivers the words after the agent has begun, so the tester's turn stays open until
they arrive instead of ending word-less ("[INTERRUPTED]") with the words in a second turn.
"""
from __future__ import annotations

from voice.protocol import rtvi


class HumanTurnBuilder:
    """Feed every agent event; get back the user-side events to process before it
    (a ``voice.bridge.peer_role.TurnBuilder``)."""

    def __init__(self) -> None:
        self._open = False
        self._text = ""
        self._overtaken = False
        """The agent began speaking while the open turn still had no words."""

    def feed(self, agent_event: dict) -> list[dict]:
        kind = rtvi.message_type(agent_event)
        if kind == "user-started-speaking":
            if not self._open:
                return self._start()
            if self._text:  # a new utterance after a transcribed one: that one is a turn
                return [*self._finish(), *self._start()]
            if self._overtaken:  # the word-less sound before the agent spoke was no turn (noise)
                return self._start()  # reopening drops it from the turns (segments only)
            return []
        if kind == "user-transcription":
            data = rtvi.message_data(agent_event)
            text = str(data.get("text", "")).strip() if isinstance(data, dict) else ""
            if not text or not (isinstance(data, dict) and data.get("final")):
                return []
            events = [] if self._open else self._start()
            self._text = f"{self._text} {text}".strip()
            events.append(rtvi.bot_tts_text(text))
            if self._overtaken:  # the agent is already talking: this utterance is complete
                events += self._finish()
            return events
        if kind == "bot-started-speaking" and self._open:
            if not self._text:  # the words are still being decoded
                self._overtaken = True
                return []
            return self._finish()
        return []

    def _start(self) -> list[dict]:
        self._open, self._text, self._overtaken = True, "", False
        return [rtvi.bot_started_speaking()]

    def _finish(self) -> list[dict]:
        self._open, self._text, self._overtaken = False, "", False
        return [rtvi.bot_stopped_speaking()]


def forget_self_heard(side: str, turns: list[dict], heard: list[str | None]) -> None:
    """A human's turn *is* what the agent heard, so it has no separate "heard" text: clearing it
    keeps key-entity accuracy from scoring the agent's ASR against itself (it reads N/A)."""
    for index, turn in enumerate(turns):
        if turn.get("role") == side:
            turn.pop("heard", None)
            if index < len(heard):
                heard[index] = None
