"""How the engine treats the peer on one side, as that peer declares it (harness.md §3.3).

The engine connects two peers and does not ask what they are. What differs between a bot and,
say, a person in the browser is a ``PeerRole`` the peer object carries as ``role``: whether it
answers the bridge's requests (setup and end-of-scenario pulls), whether its exit ends the call
under either end policy, whether its turns are built from the other side's events, and what to
tidy in the finished turns. A peer without ``role`` is a bot.
"""
from __future__ import annotations

from typing import Protocol


class TurnBuilder(Protocol):
    """Turns of a side that sends no speaking events, built from the other side's events."""

    def feed(self, other_side_event: dict) -> list[dict]:
        """Every event of the other side, in order; returns this side's events to process first."""


class PeerRole:
    """A bot's role (the default); a peer that differs provides a subclass."""

    answers_requests: bool = True
    """Set up before the conversation and pulled after it (§3.2 steps 3-5, 12)."""
    exit_ends_call: bool = False
    """Its ``<exit>`` ends the call whatever the end policy (a person leaving, §3.3)."""

    def turn_builder(self, modality: str) -> TurnBuilder | None:
        """None: the peer reports its own speaking events."""
        return None

    def finish_turns(self, side: str, turns: list[dict], heard: list[str | None]) -> None:
        """Last word on the finished turns and heard texts of ``side`` (in place)."""


BOT = PeerRole()


def role_of(peer: object) -> PeerRole:
    """The role ``peer`` declares, a bot's when it declares none."""
    return getattr(peer, "role", BOT)
