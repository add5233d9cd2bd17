"""The protocol double (harness.md §21): a ``Brain`` with no ASR, LLM or TTS.

Behind a real ``BotHost`` it speaks the full wire protocol, so the bridge and the protocol tests
run without models. It plays a script of turns (events, a tone or an ``utterance`` message, a
token entry each), runs scripted tool calls against ``shared_state`` exactly as real tools do
(db mutation, an action record, ``action-applied`` through the ``__rtvi`` handle), ends with
``<exit>`` after the end tool's result, and can misbehave on request.
"""
from __future__ import annotations

import asyncio
import functools
import json
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Literal

import numpy as np

from voice.bots.brain import BrainConfig, Emit
from voice.bots.host import RTVI_KEY, TOOL_DOMAIN_KEY, BotHost, DbHasher
from voice.audio.pcm import rms as _rms
from voice.protocol import rtvi
from voice.protocol.channel import AudioChunk

SILENCE_POLL = 0.05


@dataclass(frozen=True)
class ScriptedTool:
    """One tool call: ``db_patch`` keys are merged into ``shared_state["db"]``."""

    name: str
    arguments: dict = field(default_factory=dict)
    db_patch: dict = field(default_factory=dict)
    record_action: bool = True


@dataclass(frozen=True)
class ScriptedTurn:
    """One response: tool calls first, then the spoken text; ``end`` calls the end tool after."""

    text: str
    tools: tuple[ScriptedTool, ...] = ()
    end: bool = False


@dataclass(frozen=True)
class DoubleOptions:
    role: Literal["agent", "user"] = "agent"
    modality: Literal["voice", "text"] = "text"
    script: tuple[ScriptedTurn, ...] = ()
    # misbehaviours (§21)
    never_speak: bool = False
    stall_after: int | None = None
    """Stop responding after this many responses."""
    never_end: bool = False
    """Ignore ``end`` (the end tool is never called)."""
    repeat_last: bool = False
    """Once the script is exhausted keep answering with the last text (never ending)."""
    only_silence: bool = False
    """Voice: stream silent frames forever and never speak."""
    disconnect_mid_turn: int | None = None
    """Drop the connection in the middle of this response (0-based)."""
    disconnect_after_exit: bool = False
    """Drop the connection right after sending ``<exit>``."""
    start_delay: float = 0.0
    """Take this long to start, as a bot loading its models does when its connection opens."""
    stop_delay: float = 0.0
    """Text: wait this long between sending the utterance and ``bot-stopped-speaking``."""
    malformed_audio: bool = False
    """Voice: precede every tone chunk with one at sample rate 0 and give it an odd byte count."""
    # audio
    output_rate: int = 24000
    chunk_seconds: float = 0.1
    chunks_per_turn: int = 3
    tone_hz: float = 440.0
    interleave_silence: bool = False
    """Voice: follow every tone chunk with a silent one (like transports that stream silence)."""
    end_of_speech_silence: float = 0.3
    speech_rms_threshold: float = 200.0
    # accounting
    prompt_tokens: int = 100
    completion_tokens: int = 20


class DoubleBrain:
    """Scripted ``Brain``; it answers when the other side finishes an utterance (or the kickoff)."""

    def __init__(self, options: DoubleOptions) -> None:
        self.options = options
        self.disconnect: Callable[[], Awaitable[None]] | None = None
        self.shared_state: dict = {}
        self.prompt = ""
        self.tools: dict[str, dict] = {}
        self.messages: list[dict] = []
        self.responses = 0
        self.heard: list[str] = []
        self._emit: Emit | None = None
        self._triggers: asyncio.Queue[None] = asyncio.Queue()
        self._tasks: list[asyncio.Task] = []
        self._speech_started: float | None = None
        self._last_speech = 0.0

    @property
    def modality(self) -> str:
        """Stated in the handshake, like the built-in bots."""
        return self.options.modality

    # --- Brain protocol ---------------------------------------------------------------------------

    async def start(self, emit: Emit) -> None:
        await asyncio.sleep(self.options.start_delay)
        self._emit = emit
        self._triggers = asyncio.Queue()
        self._tasks = [asyncio.create_task(self._responder())]
        if self.options.modality == "voice":
            self._tasks.append(asyncio.create_task(self._end_of_speech_watch()))
            if self.options.only_silence:
                self._tasks.append(asyncio.create_task(self._stream_silence()))

    async def stop(self) -> None:
        self._emit = None
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def configure(self, config: BrainConfig) -> None:
        self.prompt, self.tools, self.shared_state = config.prompt, config.tools, config.shared_state
        self.messages = [{"role": "system", "content": config.prompt}]
        self.responses = 0

    async def reset(self) -> None:
        self._speech_started = None

    async def handle_text(self, text: str, *, kind: Literal["kickoff", "utterance"]) -> None:
        self._heard(text)

    async def handle_audio(self, chunk: AudioChunk) -> None:
        if _rms(chunk.pcm) < self.options.speech_rms_threshold:
            return
        now = time.monotonic()
        if self._speech_started is None:
            self._speech_started = now
            await self._send(rtvi.user_started_speaking())
        self._last_speech = now

    async def context_history(self) -> list[dict]:
        return [dict(message) for message in self.messages]

    # --- behaviour --------------------------------------------------------------------------------

    def _heard(self, text: str) -> None:
        self.heard.append(text)
        self.messages.append({"role": "user", "content": text})
        self._triggers.put_nowait(None)

    async def _end_of_speech_watch(self) -> None:
        """Voice: the other side's turn ends after a short silence; report it and answer."""
        while True:
            await asyncio.sleep(SILENCE_POLL)
            started = self._speech_started
            if started is None or time.monotonic() - self._last_speech < self.options.end_of_speech_silence:
                continue
            self._speech_started = None
            text = f"[speech {self._last_speech - started:.1f}s]"
            await self._send(rtvi.user_stopped_speaking())
            await self._send(rtvi.user_transcription(text, final=True))
            self._heard(text)

    async def _responder(self) -> None:
        while True:
            await self._triggers.get()
            await self._respond()

    def _next_turn(self) -> ScriptedTurn | None:
        options = self.options
        if options.never_speak or options.only_silence:
            return None
        if options.stall_after is not None and self.responses >= options.stall_after:
            return None
        if self.responses < len(options.script):
            return options.script[self.responses]
        if options.repeat_last and options.script:
            return ScriptedTurn(text=options.script[-1].text)
        return None

    async def _respond(self) -> None:
        turn = self._next_turn()
        if turn is None:
            return
        index = self.responses
        self.responses += 1
        for tool in turn.tools:
            await self._call_tool(tool)
        await self._send(rtvi.bot_started_speaking())
        await self._send(rtvi.bot_tts_text(turn.text))
        if self.options.disconnect_mid_turn == index and self.disconnect is not None:
            await self.disconnect()
            return
        if self.options.modality == "voice":
            await self._play_tone()
        else:
            await self._send(rtvi.utterance(self.options.role, turn.text))
            await asyncio.sleep(self.options.stop_delay)
        await self._send(rtvi.bot_stopped_speaking())
        await self._send(rtvi.metrics_tokens(self.options.prompt_tokens, self.options.completion_tokens))
        self.messages.append({"role": "assistant", "content": turn.text})
        if turn.end and not self.options.never_end:
            await self._end_call()

    async def _play_tone(self) -> None:
        """Real-time paced tone chunks, optionally each followed by a silent chunk."""
        options = self.options
        tone = _tone(options)
        chunks = [tone, bytes(len(tone))] if options.interleave_silence else [tone]
        for _ in range(options.chunks_per_turn):
            if options.malformed_audio:
                await self._send(AudioChunk(tone, 0))
            for pcm in chunks:
                pcm = pcm + b"\x00" if options.malformed_audio else pcm
                await self._send(AudioChunk(pcm, options.output_rate))
                await asyncio.sleep(options.chunk_seconds)

    async def _call_tool(self, tool: ScriptedTool) -> None:
        """A tool round: the call, its effect on shared_state, its result, then a token entry."""
        call_id = f"call_{len(self.messages)}"
        self._record_call(call_id, tool.name, tool.arguments)
        db = self.shared_state.get("db")
        if isinstance(db, dict):
            db.update(json.loads(json.dumps(tool.db_patch)))
        result: dict = {"success": True}
        if tool.record_action:
            action = {"action_type": tool.name, **tool.arguments}
            self.shared_state.setdefault("actions", []).append(action)
            domain = str(self.shared_state.get(TOOL_DOMAIN_KEY, "default"))
            await self._push(rtvi.action_applied(action, domain)["data"])
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)})
        await self._send(rtvi.metrics_tokens(self.options.prompt_tokens, self.options.completion_tokens))

    async def _end_call(self) -> None:
        """``end_conversation``: the exit tag goes out only after the result is in the context."""
        call_id = f"call_{len(self.messages)}"
        self._record_call(call_id, "end_conversation", {})
        result = {"success": True, "message": "Exit message sent."}
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)})
        await self._push(rtvi.exit_message()["data"])
        if self.options.disconnect_after_exit and self.disconnect is not None:
            await self.disconnect()

    def _record_call(self, call_id: str, name: str, arguments: dict) -> None:
        self.messages.append(
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
                ],
            }
        )

    async def _stream_silence(self) -> None:
        frame = bytes(len(_tone(self.options)))
        while True:
            await self._send(AudioChunk(frame, self.options.output_rate))
            await asyncio.sleep(self.options.chunk_seconds)

    async def _push(self, data: dict) -> None:
        """Through the RTVI handle update_system_prompt stored, like a real tool would."""
        handle = self.shared_state.get(RTVI_KEY)
        if handle is not None:
            await handle.push_server_message(data)
        else:
            await self._send(rtvi.server_message(data))

    async def _send(self, item: object) -> None:
        if self._emit is not None:
            await self._emit(item)  # type: ignore[arg-type]


def double_host(options: DoubleOptions, *, db_hasher: DbHasher | None = None) -> BotHost:
    """A ``BotHost`` around a fresh ``DoubleBrain`` (wired so it can drop its own connection)."""
    brain = DoubleBrain(options)
    host = BotHost(brain, db_hasher=db_hasher)
    brain.disconnect = host.drop_connection
    return host


@functools.lru_cache(maxsize=8)
def _tone_chunk(rate: int, seconds: float, hz: float) -> bytes:
    t = np.arange(int(rate * seconds)) / rate
    return (8000 * np.sin(2 * np.pi * hz * t)).astype("<i2").tobytes()


def _tone(options: DoubleOptions) -> bytes:
    return _tone_chunk(options.output_rate, options.chunk_seconds, options.tone_hz)


def default_options(role: Literal["agent", "user"], modality: Literal["voice", "text"]) -> DoubleOptions:
    """A well-behaved three-response agent / two-response passenger (``run_bot --double``)."""
    if role == "agent":
        script = (
            ScriptedTurn("Hello, thank you for calling. How can I help you today?"),
            ScriptedTurn("Let me take care of that for you. It is done."),
            ScriptedTurn("You are all set. Goodbye.", end=True),
        )
    else:
        script = (ScriptedTurn("Hi, I would like to change my flight."), ScriptedTurn("Great, thank you. Bye."))
    return DoubleOptions(role=role, modality=modality, script=script)
