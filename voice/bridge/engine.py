"""The bridge engine: one attempt of one scenario between two peers (harness.md §3.2, §4, §9).

``run_session`` sets both bots up, runs the conversation (relaying audio or, in text modality,
utterance messages), stops on the first stop condition, pulls each bot's context and summary
on its own connection, and returns a ``SessionOutcome``. It never writes files: the runner does.

What plugs in from outside: each peer's ``role`` (voice.bridge.peer_role; a human tester's comes
from voice.human), a ``tap`` that hears every relayed frame (listening in, voice.listen.tap),
and per-direction audio ``conditions`` applied on the way to the side that hears them.
"""
from __future__ import annotations

import asyncio
import functools
import time
from datetime import datetime
from typing import TYPE_CHECKING, Callable, Mapping

from voice.audio.pcm import Recording, resample, usable_chunk
from voice.bridge.config import BridgeConfig
from voice.bridge.conversation import SIDES, ConversationState, other
from voice.bridge.endpoints import PeerEndpoint
from voice.bridge.outcome import SessionInputs, SessionOutcome, SessionSetupError
from voice.bridge.peer_role import PeerRole, TurnBuilder, role_of
from voice.bridge.relay import AudioRelay, ConditionError
from voice.bridge.requests import request_or_none
from voice.bridge.setup import open_connection, prepare_bots
from voice.bridge.stop_reasons import DISCONNECTED, EXIT, INACTIVITY_TIMEOUT, SIMULATOR_EXIT, TIMEOUT
from voice.bridge.summary import merge_summaries, parse_context
from voice.bridge.taps import RelayTap
from voice.bridge.timeline import Timeline
from voice.protocol import rtvi
from voice.protocol.channel import AudioChunk, Channel, ConnectionClosed

if TYPE_CHECKING:  # the contract between the engine and the conditions (team.md)
    from voice.conditions.base import AudioCondition

WATCHDOG_PERIOD = 0.1
PULL_MARGIN = 2.0
"""Seconds on top of the two request timeouts before a side's end-of-scenario pulls are abandoned."""

__all__ = [
    "run_session", "SessionInputs", "SessionOutcome", "SessionSetupError", "ConditionError",
    "EXIT", "SIMULATOR_EXIT", "INACTIVITY_TIMEOUT", "TIMEOUT", "DISCONNECTED",
]


async def run_session(
    *,
    scenario_inputs: SessionInputs,
    agent: PeerEndpoint,
    user: PeerEndpoint | None,
    config: BridgeConfig,
    on_event: Callable[[dict], None] | None = None,
    log: Callable[[str], None] | None = None,
    tap: RelayTap | None = None,
    conditions: Mapping[str, AudioCondition] | None = None,
) -> SessionOutcome:
    """Run one attempt; raises ``SessionSetupError`` when the bots cannot be set up, and
    ``ConditionError`` when an audio condition breaks its contract mid-call.

    ``user=None`` runs the agent side only. A peer's ``role`` says how it differs from a bot
    (a tester in the browser is never set up or pulled, etc.: voice.human.role). ``tap`` is told
    of every frame the relays send. ``conditions`` maps the side that *hears* ("agent", "user")
    to the condition its incoming audio passes through (voice only; fresh instances per
    session, since they keep state); a side without one hears the relayed audio untouched.
    """
    conditions = dict(conditions or {})
    unknown = set(conditions) - set(SIDES)
    if unknown:
        raise ValueError(f"audio conditions for unknown sides {sorted(unknown)}: use 'agent' or 'user'")
    if conditions and config.modality != "voice":
        raise ValueError("audio conditions need voice modality")
    session = _Session(scenario_inputs, agent, user, config, on_event, log, tap, conditions)
    return await session.run()


class _Session:
    def __init__(self, inputs: SessionInputs, agent: PeerEndpoint, user: PeerEndpoint | None,
                 config: BridgeConfig, on_event: Callable[[dict], None] | None,
                 log: Callable[[str], None] | None, tap: RelayTap | None,
                 conditions: dict[str, AudioCondition]) -> None:
        self.inputs = inputs
        self.endpoints: dict[str, PeerEndpoint] = {"agent": agent} if user is None else {"user": user, "agent": agent}
        self.roles: dict[str, PeerRole] = {side: role_of(ep) for side, ep in self.endpoints.items()}
        self.bots = {side: ep for side, ep in self.endpoints.items() if self.roles[side].answers_requests}
        self._turn_builders: dict[str, TurnBuilder] = {}
        """Sides whose turns come from the other side's events."""
        for side, role in self.roles.items():
            builder = role.turn_builder(config.modality)
            if builder is not None:
                self._turn_builders[side] = builder
        self.config = config
        self.on_event = on_event
        self._log_sink = log
        self.lines: list[str] = []
        self.channels: dict[str, Channel] = {}
        self.relays: dict[str, AudioRelay] = {}
        self.tap = tap
        self.conditions = conditions
        self._audio_start: float | None = None
        """``time.monotonic()`` of frame 0 on both relays (one audio clock for both directions)."""
        self._fatal: BaseException | None = None
        self.stop_reason: str | None = None
        self._stopped = asyncio.Event()
        self._processing = True
        self._bad_audio: dict[tuple[str, str], int] = {}
        self._held_utterance: dict[str, dict] = {}
        """Text modality: a side's utterance waits for that side's ``bot-stopped-speaking``, so its
        turn is recorded before the other side can answer it (turn order never races)."""
        self._t0 = 0.0
        self.state = ConversationState(
            modality=config.modality, speech_rms_threshold=config.speech_rms_threshold,
            on_event=on_event, log=self.log,
        )

    # --- plumbing ---------------------------------------------------------------------------------

    def log(self, line: str) -> None:
        stamped = f"[{datetime.now().strftime('%H:%M:%S.%f')[:-3]}] {line}"
        self.lines.append(stamped)
        if self._log_sink is not None:
            self._log_sink(stamped)

    def now(self) -> float:
        """Seconds since the conversation start (monotonic)."""
        return time.monotonic() - self._t0

    def _fire(self, reason: str, delay: float = 0.0) -> None:
        """Record the first stop reason; stop the loops after ``delay`` (settle / grace)."""
        if self.stop_reason is not None:
            return
        self.stop_reason = reason
        self.log(f"stop: {reason} (stopping in {delay:.2f} s)")
        self.state.emit({"type": "stop", "reason": reason})
        if delay > 0:
            asyncio.get_running_loop().call_later(delay, self._stopped.set)
        else:
            self._stopped.set()

    def _lost(self, side: str, why: str) -> None:
        if not self._stopped.is_set():
            self.log(f"{side}: connection lost ({why})")
            self._fire(DISCONNECTED)

    # --- phases -----------------------------------------------------------------------------------

    async def run(self) -> SessionOutcome:
        await self._setup()
        await asyncio.sleep(self.config.effective_pause)
        return await self._converse()

    async def _setup(self) -> None:
        channels: dict[str, Channel] = {}
        try:
            for side, endpoint in self.bots.items():
                channels[side] = await open_connection(side, endpoint, self.config, self.log, conversation=False)
                self.log(f"{side}: setup connection ready ({endpoint.label})")
            await prepare_bots(channels, self.inputs, self.config, self.log)
        except SessionSetupError as exc:
            self.log(f"ERROR: {exc}")
            raise
        finally:
            await asyncio.gather(*(channel.close() for channel in channels.values()), return_exceptions=True)

    async def _converse(self) -> SessionOutcome:
        self._t0 = time.monotonic()
        start_iso = datetime.now().isoformat()
        try:
            for side, endpoint in self.endpoints.items():
                self.channels[side] = await open_connection(side, endpoint, self.config, self.log, conversation=True)
                self.log(f"{side}: conversation connection ready")
            await self._run_loops()
            if self._fatal is not None:
                raise self._fatal
            pulls = await self._pull_all()
        finally:
            await asyncio.gather(*(channel.close() for channel in self.channels.values()), return_exceptions=True)
        return self._outcome(pulls, start_iso)

    async def _run_loops(self) -> None:
        """Run the per-side loops until the first stop condition has fired (and settled).

        A loop that dies of an unexpected exception would otherwise leave its direction silent
        until the duration ends: it counts as a lost connection.
        """
        tasks = self._start_loops()
        stopped = asyncio.create_task(self._stopped.wait())
        running = set(tasks)
        try:
            while not self._stopped.is_set():
                done, running = await asyncio.wait(running | {stopped}, return_when=asyncio.FIRST_COMPLETED)
                running.discard(stopped)
                for task in done - {stopped}:
                    self._loop_ended(task)
        finally:
            for task in (*tasks, stopped):
                task.cancel()
            await asyncio.gather(*tasks, stopped, return_exceptions=True)

    def _loop_ended(self, task: asyncio.Task) -> None:
        error = None if task.cancelled() else task.exception()
        if error is None:
            return  # the kickoff, or a loop that already reported its lost connection
        self.log(f"ERROR: {task.get_name()} died: {type(error).__name__}: {error}")
        if isinstance(error, ConditionError):
            self._fatal = error  # the harness's fault: no verdict on this conversation
        self._fire(DISCONNECTED)

    def _start_loops(self) -> list[asyncio.Task]:
        tasks = [asyncio.create_task(self._watchdog(), name="watchdog")]
        if self.config.modality == "voice":
            self._audio_start = time.monotonic()
            for side in self.channels:
                rate = self.config.agent_in_rate if side == "agent" else self.config.user_in_rate
                self.relays[side] = AudioRelay(
                    dest_rate=rate, frame_seconds=self.config.audio_chunk_seconds,
                    condition=self.conditions.get(side), speech_threshold=self.config.speech_rms_threshold,
                )
                tasks.append(asyncio.create_task(self._send_loop(side), name=f"{side} send loop"))
        for side, channel in self.channels.items():
            tasks.append(asyncio.create_task(self._receive_loop(side, channel), name=f"{side} receive loop"))
        tasks.append(asyncio.create_task(self._kickoff(), name="kickoff"))
        return tasks

    # --- loops ------------------------------------------------------------------------------------

    async def _watchdog(self) -> None:
        config = self.config
        while not self._stopped.is_set():
            now = self.now()
            if now >= config.duration_seconds:
                self._processing = False  # events during the grace period are not processed
                self._fire(TIMEOUT, config.grace)
            elif config.inactivity_timeout > 0 and now - self.state.last_activity >= config.inactivity_timeout:
                self._fire(INACTIVITY_TIMEOUT)
            await asyncio.sleep(WATCHDOG_PERIOD)

    async def _kickoff(self) -> None:
        await asyncio.sleep(self.config.effective_kickoff_delay)
        try:
            await self.channels["agent"].send(rtvi.send_text("Hello"))
            self.log("agent: kickoff sent")
        except ConnectionClosed as exc:
            self._lost("agent", str(exc))

    async def _receive_loop(self, side: str, channel: Channel) -> None:
        while True:
            try:
                item = await channel.recv()
            except ConnectionClosed as exc:
                self._lost(side, str(exc))
                return
            if not self._processing or self.now() >= self.config.duration_seconds:
                continue
            try:
                await self._handle(side, item)
            except Exception as exc:  # one bad event must not end the conversation
                self.log(f"{side}: error handling inbound item: {type(exc).__name__}: {exc}")

    async def _handle(self, side: str, item: object) -> None:
        now = self.now()
        if isinstance(item, AudioChunk):
            chunk = self._checked_audio(side, item) if self.config.modality == "voice" else None
            if chunk is not None:
                self.state.on_audio(side, chunk, now)
                relay = self.relays.get(other(side))
                if relay is not None:
                    relay.put(chunk)
            return
        if not isinstance(item, dict):
            return
        kind = rtvi.message_type(item)
        if self.config.modality == "text" and kind in ("utterance", "bot-started-speaking"):
            await self._release_utterance(side)  # a side that never said it stopped still gets heard
            if kind == "utterance":
                self._held_utterance[side] = item
        builder = self._turn_builders.get(other(side))
        if builder is not None:  # the other side's turns are built from this side's events
            for event in builder.feed(item):
                self.state.on_message(other(side), event, now)
        exited = self.state.on_message(side, item, now)
        if kind == "bot-stopped-speaking":
            await self._release_utterance(side)
        if exited == "agent":
            self._fire(EXIT, self.config.settle)
        elif exited == "user" and (self.roles["user"].exit_ends_call
                                   or self.config.conversation_end_policy == "valid-terminal-state"):
            self._fire(SIMULATOR_EXIT, self.config.settle)

    def _checked_audio(self, side: str, chunk: AudioChunk) -> AudioChunk | None:
        """The chunk as it may be relayed, or None to drop it; problems are logged (rate-limited)."""
        usable, problem = usable_chunk(chunk)
        if problem is not None:
            action = "dropped" if usable is None else "trimmed"
            count = self._bad_audio[(side, action)] = self._bad_audio.get((side, action), 0) + 1
            if count == 1 or count % 100 == 0:
                self.log(f"{side}: {action} malformed audio chunk ({problem}); {count} so far")
        return usable

    async def _release_utterance(self, side: str) -> None:
        held = self._held_utterance.pop(side, None)
        if held is not None:
            await self._forward(other(side), held)

    async def _forward(self, side: str, message: dict) -> None:
        channel = self.channels.get(side)
        if channel is None:
            return
        try:
            await channel.send(message)
        except ConnectionClosed as exc:
            self._lost(side, str(exc))

    def _forwarding(self) -> bool:
        """Send loops stop forwarding once the duration elapsed (they keep draining, §6.2)."""
        return self._processing and self.now() < self.config.duration_seconds

    async def _send_loop(self, side: str) -> None:
        channel = self.channels[side]
        relay = self.relays[side]
        tap = None if self.tap is None else functools.partial(self.tap.relayed, side)
        try:
            await relay.run(channel.send, forwarding=self._forwarding, start=self._audio_start, tap=tap)
        except ConnectionClosed as exc:
            self._lost(side, str(exc))

    # --- end of scenario --------------------------------------------------------------------------

    async def _pull_all(self) -> dict[str, tuple[list, dict | None]]:
        sides = [side for side in self.channels if side in self.bots]
        results = await asyncio.gather(*(self._bounded_pull(side) for side in sides))
        return dict(zip(sides, results))

    async def _bounded_pull(self, side: str) -> tuple[list, dict | None]:
        """``_pull`` under one overall deadline: a failed pull is an empty result (§3.2 step 12)."""
        budget = 2 * self.config.request_timeout + PULL_MARGIN
        try:
            async with asyncio.timeout(budget):
                return await self._pull(side)
        except TimeoutError:
            self.log(f"{side}: end-of-scenario pulls abandoned after {budget:.1f} s")
            return [], None

    async def _pull(self, side: str) -> tuple[list, dict | None]:
        """get_context_history then get_scenario_summary on ``side``'s own connection."""
        channel, timeout = self.channels[side], self.config.request_timeout
        context = await request_or_none(channel, "get_context_history", {}, side=side, timeout=timeout, log=self.log)
        include_db = self.config.include_db_agent if side == "agent" else False
        summary = await request_or_none(
            channel, "get_scenario_summary", {"include_db": include_db}, side=side, timeout=timeout, log=self.log
        )
        return parse_context(context), summary if isinstance(summary, dict) else None

    def _recording(self) -> Recording | None:
        if self.config.modality != "voice" or not self.relays:
            return None
        rate = self.config.recording_rate
        left = self.relays.get("agent")
        right = self.relays.get("user")
        return Recording(
            left=resample(bytes(left.sent), left.dest_rate, rate) if left else b"",
            right=resample(bytes(right.sent), right.dest_rate, rate) if right else b"",
            sample_rate=rate,
        )

    def _audio_offset(self) -> float | None:
        """Seconds from the conversation start to frame 0 of the relays (the recording's start)."""
        return None if self._audio_start is None else self._audio_start - self._t0

    def _speech_timeline(self) -> Timeline | None:
        """Each speaker's segments, from the relay that carries its voice (None in text)."""
        offset = self._audio_offset()
        if offset is None:
            return None
        carried_by = {speaker: self.relays.get(other(speaker)) for speaker in SIDES}
        return {speaker: relay.timeline.segments(offset) if relay is not None else []
                for speaker, relay in carried_by.items()}

    def _outcome(self, pulls: dict[str, tuple[list, dict | None]], start_iso: str) -> SessionOutcome:
        agent_context, agent_summary = pulls.get("agent", ([], None))
        user_context, user_summary = pulls.get("user", (None, None))
        merged = merge_summaries(agent_summary, user_summary)
        final_db = agent_summary.get("db") if agent_summary else None
        state = self.state
        state.transcript.finalize_open(self.now())
        for side, role in self.roles.items():
            role.finish_turns(side, state.transcript.turns, state.heard)
        stop_reason = self.stop_reason or TIMEOUT
        duration = self.now()
        self.log(f"conversation ended: {stop_reason}, {len(state.transcript.turns)} turns, {duration:.2f} s")
        return SessionOutcome(
            turns=state.transcript.turns,
            segments=state.transcript.segments,
            latencies=state.latency.records,
            stop_reason=stop_reason,
            end_conversation_tool_called="agent" in state.exits,
            simulator_end_reported="user" in state.exits,
            last_speaker=state.transcript.last_speaker,
            token_usage=state.token_usage,
            merged_summary=merged,
            agent_pull_ok=agent_summary is not None,
            agent_summary=agent_summary,
            user_summary=user_summary,
            agent_final_db=final_db if isinstance(final_db, dict) else None,
            agent_context=agent_context,
            user_context=user_context if "user" in self.channels and "user" in self.bots else None,
            duration_seconds=duration,
            start_time_iso=start_iso,
            end_time_iso=datetime.now().isoformat(),
            final_responses=state.final_responses,
            recording=self._recording(),
            heard=state.heard,
            bridge_log=self.lines,
            modality=self.config.modality,
            conversation_started=self._t0,
            speech_timeline=self._speech_timeline(),
            recording_offset=self._audio_offset(),
        )
