"""What the bridge learns from inbound traffic during a conversation (harness.md §5.9, §7-§10).

Pure bookkeeping, no I/O: the engine feeds every inbound event and audio frame with its receive
time; this object keeps turns and segments, latency, token usage, exit flags, what each side
heard, and the time of the last meaningful activity. Stop decisions stay with the engine.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from voice.audio.pcm import is_speech
from voice.bridge.latency import LatencyMeter
from voice.bridge.token_usage import add_entry, empty_usage
from voice.bridge.transcript import Transcript, join_text
from voice.protocol import rtvi
from voice.protocol.channel import AudioChunk

SIDES = ("agent", "user")


def other(side: str) -> str:
    return "user" if side == "agent" else "agent"


@dataclass
class _Heard:
    """Final transcriptions the listener reported while hearing one turn of ``speaker``."""

    turn_index: int | None = None
    text: str = ""


@dataclass
class ConversationState:
    modality: str
    speech_rms_threshold: float = 200.0
    on_event: Callable[[dict], None] | None = None
    log: Callable[[str], None] = lambda line: None
    transcript: Transcript = field(default_factory=Transcript)
    latency: LatencyMeter = field(default_factory=LatencyMeter)
    token_usage: dict = field(default_factory=lambda: {side: empty_usage() for side in SIDES})
    heard: list[str | None] = field(default_factory=list)
    final_responses: list[str] = field(default_factory=list)
    exits: list[str] = field(default_factory=list)
    """Sides whose ``<exit>`` was seen, in order."""
    last_activity: float = 0.0
    _listening: dict[str, _Heard] = field(default_factory=dict)

    # --- inputs -----------------------------------------------------------------------------------

    def on_audio(self, side: str, chunk: AudioChunk, now: float) -> bool:
        """Classify an inbound frame; speech feeds latency and inactivity. Returns is-speech."""
        speech = is_speech(chunk.pcm, self.speech_rms_threshold)
        if speech:
            self.last_activity = now
            if side == "user":
                self.latency.user_speech(now)
            else:
                self._record_latency(now)
        return speech

    def on_message(self, side: str, message: dict, now: float) -> str | None:
        """Process one inbound event; returns ``side`` when it was an exit signal."""
        if rtvi.resets_inactivity(message):
            self.last_activity = now
        kind = rtvi.message_type(message)
        data = rtvi.message_data(message)
        if kind == "bot-started-speaking":
            self._started(side, now)
        elif kind == "bot-tts-text":
            self.transcript.add_text(side, str(data.get("text", "")) if isinstance(data, dict) else "")
        elif kind == "bot-stopped-speaking":
            self._stopped(side, now)
        elif kind == "user-transcription":
            self._transcription(side, data)
        elif kind == "metrics":
            self._tokens(side, message)
        elif kind == "server-message":
            return self._server_message(side, message)
        elif kind in ("llm-function-call", "action"):
            self.log(f"{side}: tool call notice {data}")
        return None

    # --- handlers ---------------------------------------------------------------------------------

    def _started(self, side: str, now: float) -> None:
        self.transcript.started(side, now)
        if side == "agent":
            self.latency.agent_turn_started()
        else:
            self.latency.user_turn_started()
        self._listening[other(side)] = _Heard()  # the other side now hears this new turn
        self._listening.pop(side, None)  # this side answered: what it heard before is complete
        if self.modality == "text" and side == "agent":
            self._record_latency(now)

    def _stopped(self, side: str, now: float) -> None:
        turn = self.transcript.stopped(side, now)
        if turn is None:
            return
        self.heard.append(None)
        listening = self._listening.get(other(side))
        if listening is not None:
            listening.turn_index = len(self.transcript.turns) - 1
        self._set_heard(len(self.transcript.turns) - 1, listening.text if listening else "")
        if side == "user":
            if self.modality == "text":
                self.latency.user_speech(now)
            self.latency.user_turn_ended(turn["text"], now)
        else:
            self.latency.agent_turn_ended(turn["text"])
        self.log(f"turn {side}: {turn['text']}")
        self.emit({"type": "turn", "role": side, "text": turn["text"], "timestamp": turn["timestamp"]})

    def _transcription(self, listener: str, data: object) -> None:
        if not isinstance(data, dict):
            return
        text = str(data.get("text", "")).strip()
        self.log(f"{listener} heard ({'final' if data.get('final') else 'partial'}): {text}")
        listening = self._listening.get(listener)
        if not data.get("final") or not text or listening is None:
            return
        listening.text = join_text(listening.text, text)
        if listening.turn_index is not None:
            self._set_heard(listening.turn_index, listening.text)

    def _set_heard(self, index: int, text: str) -> None:
        """Voice turns also carry ``heard`` (§14.5 key-entity accuracy); text turns do not."""
        self.heard[index] = text or None
        if self.modality == "voice":
            self.transcript.turns[index]["heard"] = text or None

    def _tokens(self, side: str, message: dict) -> None:
        for entry in rtvi.token_entries(message):
            add_entry(self.token_usage[side], entry)

    def _server_message(self, side: str, message: dict) -> str | None:
        text = rtvi.server_text(message)
        if rtvi.is_exit_text(text):
            self.exits.append(side)
            self.log(f"{side}: exit signal {text}")
            self.emit({"type": "exit", "role": side, "text": text})
            return side
        payload = rtvi.final_response_payload(text)
        if payload is not None:
            self.final_responses.append(payload)
        elif rtvi.is_action_applied(message):
            self.log(f"{side}: action applied {rtvi.message_data(message).get('action')}")
        return None

    def _record_latency(self, now: float) -> None:
        record = self.latency.agent_speech(now)
        if record is not None:
            self.log(f"latency {record['latency_ms']:.1f} ms")

    def emit(self, event: dict) -> None:
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception as exc:  # a progress display must never break the session
                self.log(f"on_event failed: {exc}")
