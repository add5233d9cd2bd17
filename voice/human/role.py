"""What makes a human tester's side different to the bridge engine (harness.md §3.3, §7.3, §9.1).

``HumanPeer`` carries ``HUMAN_ROLE``; the engine reads it like any peer's role and has no notion
of a person. A tester cannot answer setup requests or pulls; leaving (hang-up, a closed tab, a
lost connection) ends the call under either end policy; in voice the browser sends no speaking
events, so the tester's turns are built from the agent's; and those turns are the agent's own
transcriptions, so they carry no separate heard text.
"""
from __future__ import annotations

from voice.bridge.peer_role import PeerRole, TurnBuilder
from voice.human.turns import HumanTurnBuilder, forget_self_heard


class HumanRole(PeerRole):
    answers_requests = False
    exit_ends_call = True

    def turn_builder(self, modality: str) -> TurnBuilder | None:
        """Typed messages arrive as finished utterances with their own events (text needs none)."""
        return HumanTurnBuilder() if modality == "voice" else None

    def finish_turns(self, side: str, turns: list[dict], heard: list[str | None]) -> None:
        forget_self_heard(side, turns, heard)


HUMAN_ROLE = HumanRole()
