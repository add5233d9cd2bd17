"""Choosing who sits on each side of a session: a built-in bot in process, or a bot server
reached over the WebSocket protocol (architecture.md, Peers)."""
from __future__ import annotations

from dataclasses import dataclass

from voice.bots.factory import build_brain
from voice.bots.host import BotHost
from voice.bridge.endpoints import InProcessEndpoint, PeerEndpoint, WebSocketEndpoint
from voice.conditions.speaker import BargeInSettings, SpeakerSettings


@dataclass(frozen=True)
class PeerSpec:
    """One side's configuration: ``url`` for a protocol bot, else a built-in bot with ``model``."""

    role: str
    url: str | None = None
    model: str = ""
    llm_url: str | None = None
    api_key_name: str | None = None
    speaker: SpeakerSettings | None = None
    """How a built-in bot's TTS speaks (a ``rate``/``voice`` condition); None: the configured TTS."""
    barge_in: BargeInSettings | None = None
    """When a built-in passenger cuts into the agent (the ``barge-in`` condition); None: never."""

    @property
    def in_process(self) -> bool:
        return not self.url


def build_endpoint(spec: PeerSpec, *, modality: str) -> PeerEndpoint:
    """A fresh endpoint per scenario attempt: built-in bots never share state between scenarios."""
    if spec.url:
        return WebSocketEndpoint(spec.url)
    brain = build_brain(spec.role, model=spec.model, llm_url=spec.llm_url, api_key_name=spec.api_key_name,
                        modality=modality, speaker=spec.speaker, barge_in=spec.barge_in)
    return InProcessEndpoint(BotHost(brain))
