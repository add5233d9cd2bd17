"""What goes into a bridge session and what comes out of it (the runner's view)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from voice.audio.pcm import Recording


class SessionSetupError(RuntimeError):
    """Setup failed (connect, prompt, seeding): an attempt error, never a scored conversation."""


@dataclass(frozen=True)
class SessionInputs:
    """The scenario as the bridge sends it (§3.2 steps 3-5)."""

    user_prompt: str
    user_tools_json: str
    agent_prompt: str
    agent_tools_json: str
    tool_domain: str
    agent_shared_state_init: dict = field(default_factory=dict)
    user_shared_state_init: dict = field(default_factory=dict)
    initialization_actions: tuple = ()
    """Init-function records sent with apply_initialization (empty for eva_airline)."""


@dataclass
class SessionOutcome:
    """Everything the runner needs to score an attempt and write its artifacts (§14)."""

    turns: list[dict]
    segments: list[dict]
    latencies: list[dict]
    stop_reason: str
    end_conversation_tool_called: bool
    simulator_end_reported: bool
    last_speaker: str | None
    token_usage: dict
    merged_summary: dict
    """The §5.8 merge, always present: the agent's summary ({} when its pull failed) plus
    ``user_db_hash`` and the user's actions tagged ``side: user``. When the agent pull failed it
    holds an ``actions`` key only if the user reported actions, and then only those: callers
    (``final_agent_response.json``) read an ``actions`` key as a pulled action list."""
    agent_pull_ok: bool
    """Whether the agent's ``get_scenario_summary`` pull returned a summary."""
    agent_summary: dict | None
    user_summary: dict | None
    agent_final_db: dict | None
    agent_context: list
    user_context: list | None
    duration_seconds: float
    start_time_iso: str
    end_time_iso: str
    final_responses: list[str]
    recording: Recording | None
    """What each side heard (after its audio condition, if any): left = agent, right = user."""
    heard: list[str | None]
    """Per turn index: the final ASR text the other side's bot reported for it (voice), or None."""
    bridge_log: list[str]
    modality: str = "voice"
    conversation_started: float | None = None
    """``time.monotonic()`` just before the conversation connections were opened (§3.2 step 10),
    where the runner's ``scenario_duration`` starts."""
    speech_timeline: dict[str, list[list[float]]] | None = None
    """When each side spoke: ``{"agent": [[start_s, end_s], ...], "user": [...]}``, seconds since
    the conversation start in audio time, sorted and non-overlapping per side, measured on the
    relayed audio before any condition (voice.bridge.timeline). None in text modality."""
    recording_offset: float | None = None
    """Seconds from the conversation start to the recording's first sample (both channels start
    together): timeline time = recording time + this. None in text modality."""

    @property
    def total_turns(self) -> int:
        return len(self.turns)

    def write_wav(self, path: str | Path) -> bool:
        """Write ``conversation_log.wav``; False (nothing written) when no audio was sent."""
        if self.recording is None or not (self.recording.left or self.recording.right):
            return False
        self.recording.write_wav(path)
        return True
