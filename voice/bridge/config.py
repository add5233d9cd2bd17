"""Everything that tunes one bridge session; defaults are the spec's (harness.md §3, §6, §9)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from voice.modality import Modality, check_modality

EndPolicy = Literal["tool-only", "valid-terminal-state"]


@dataclass(frozen=True)
class BridgeConfig:
    modality: Modality = "voice"
    duration_seconds: float = 900.0
    inactivity_timeout: float = 120.0
    """Seconds without meaningful activity before [INACTIVITY_TIMEOUT]; 0 disables."""
    conversation_end_policy: EndPolicy = "tool-only"
    pause: float = 0.5
    """Sleep between closing the setup connections and opening the conversation ones (voice
    only: read ``effective_pause``)."""
    kickoff_delay: float = 1.0
    """Delay between the agent's conversation handshake and the ``Hello`` kickoff (voice only:
    read ``effective_kickoff_delay``)."""
    audio_chunk_seconds: float = 0.016
    user_out_rate: int = 24000
    agent_out_rate: int = 24000
    user_in_rate: int = 16000
    agent_in_rate: int = 16000
    recording_rate: int = 16000
    speech_rms_threshold: float = 200.0
    settle: float = 0.5
    """Delay between an exit signal and stopping, so final tool results reach both contexts."""
    grace: float = 1.0
    """Draining time after the duration elapsed before the loops end."""
    request_timeout: float = 15.0
    reset_timeout: float = 60.0
    """For ``reset``, the first request (harness.md gives it no bracket): a built-in bot loads its
    speech models as its connection opens, which on a loaded machine outlasts 15 s."""
    handshake_timeout: float = 5.0
    include_db_agent: bool = True
    """Ask the agent's summary for its final DB (this project; upstream sends false)."""
    live_key: tuple[int, str] | None = None
    """(run id, scenario directory name) under which the caller registers the session for
    listening in (``voice.listen.tap.open_tap``, handed to ``run_session(tap=...)``); the engine
    itself never reads it. None for sessions nobody can reach."""

    def __post_init__(self) -> None:
        check_modality(self.modality)
        if self.duration_seconds <= 0:
            raise ValueError("duration must be > 0")
        if self.conversation_end_policy not in ("tool-only", "valid-terminal-state"):
            raise ValueError(f"unknown conversation_end_policy {self.conversation_end_policy!r}")

    @property
    def effective_pause(self) -> float:
        """The pause and the kickoff delay warm up audio pipelines: 0 in text modality (§6.7),
        whatever was configured, so every caller gets the spec's behaviour."""
        return self.pause if self.modality == "voice" else 0.0

    @property
    def effective_kickoff_delay(self) -> float:
        return self.kickoff_delay if self.modality == "voice" else 0.0
