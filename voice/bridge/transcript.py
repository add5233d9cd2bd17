"""Speaker segments and turns built from each bot's own speaking events (harness.md §7.1)."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

INTERRUPTED = "[INTERRUPTED]"


def join_text(accumulated: str, piece: str) -> str:
    """Append a TTS text chunk; one space between two non-whitespace ends (project decision 14)."""
    if accumulated and piece and not accumulated[-1].isspace() and not piece[0].isspace():
        return f"{accumulated} {piece}"
    return accumulated + piece


@dataclass
class _OpenSegment:
    start: float
    text: str = ""


@dataclass
class Transcript:
    """At most one open segment per side; finished ones go to ``segments`` (and ``turns``)."""

    segments: list[dict] = field(default_factory=list)
    turns: list[dict] = field(default_factory=list)
    _open: dict[str, _OpenSegment] = field(default_factory=dict)

    def started(self, role: str, now: float) -> None:
        if role in self._open:
            self._close(role, now)
        self._open[role] = _OpenSegment(start=now)

    def add_text(self, role: str, text: str) -> None:
        segment = self._open.get(role)
        if segment is not None and text:
            segment.text = join_text(segment.text, text)

    def stopped(self, role: str, now: float) -> dict | None:
        """Finalize ``role``'s segment into a turn; None when no segment was open."""
        segment = self._close(role, now)
        if segment is None:
            return None
        turn = {"timestamp": datetime.now().isoformat(), "role": role, "text": segment["text"]}
        self.turns.append(turn)
        return turn

    def finalize_open(self, now: float) -> None:
        """End of conversation: open segments become segments only, never turns."""
        for role in list(self._open):
            self._close(role, now)

    @property
    def last_speaker(self) -> str | None:
        for turn in reversed(self.turns):
            if turn.get("role"):
                return turn["role"]
        return None

    def _close(self, role: str, now: float) -> dict | None:
        segment = self._open.pop(role, None)
        if segment is None:
            return None
        record = {"role": role, "start": segment.start, "end": now, "text": segment.text.strip() or INTERRUPTED}
        self.segments.append(record)
        return record
