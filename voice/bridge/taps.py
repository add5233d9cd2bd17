"""What the engine offers whoever wants to hear a call while it runs (listening in, a monitor).

A tap is handed to ``run_session(tap=...)`` by the caller; the engine never opens one itself.
It is told of every frame the relays send, after the send, as the destination heard it (any
audio condition applied). It runs on the relay's clock, so it must return at once and never
raise: whatever it does with the frame cannot be allowed to delay the call.
"""
from __future__ import annotations

from typing import Protocol

from voice.protocol.channel import AudioChunk


class RelayTap(Protocol):
    def relayed(self, dest_side: str, chunk: AudioChunk) -> None:
        """``chunk`` was just sent to ``dest_side`` ("agent" or "user")."""
