"""A human tester as the user side of a bridge session (harness.md §3.3).

``HumanPeer`` is an endpoint like the bots' (``connect()`` hands the bridge a ``Channel``) whose
``role`` (voice.human.role) tells the engine what a person cannot do: the setup and pulls, the
speaking events. What the tester does reaches the bridge as the items a passenger bot would send:

* voice: the browser's microphone frames (WebRTC, decoded by aiortc) as ``AudioChunk``s; the
  agent's audio goes back out through ``CallAudioTrack``;
* text ("type instead"): each typed message as one finished utterance (§6.7);
* hang-up, a closed tab or a failed peer connection: a user-side ``<exit>`` (§9.4), which the
  engine treats as the passenger leaving.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Any

from voice.human.role import HUMAN_ROLE
from voice.human.track import CallAudioTrack
from voice.modality import check_modality
from voice.protocol import rtvi
from voice.protocol.channel import AudioChunk, ConnectionClosed, Item
from voice.webrtc.opus import prefer_opus

logger = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 2000
MAX_QUEUED_ITEMS = 500
"""Inbound items the bridge has not read yet (10 s of 20 ms frames); older audio is dropped."""
HUNG_UP = "The caller hung up."


class _HumanChannel:
    """The bridge's end of the call; closing it leaves the tester's side to ``HumanPeer.aclose``."""

    def __init__(self, peer: HumanPeer) -> None:
        self._peer = peer
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    async def send(self, item: Item) -> None:
        if self._closed:
            raise ConnectionClosed("human call closed")
        if isinstance(item, AudioChunk):
            if self._peer.track is not None:
                self._peer.track.push(item)
        elif rtvi.message_type(item) == "client-ready":
            self._peer._put(rtvi.bot_ready())
        # The agent's utterances and requests need no answer: the page shows turns from events.

    async def recv(self) -> Item:
        if self._closed:
            raise ConnectionClosed("human call closed")
        item, received_at = await self._peer._inbox.get()
        if self._peer.inbound_delays is not None and isinstance(item, AudioChunk):
            self._peer.inbound_delays.append(time.perf_counter() - received_at)
        return item

    async def close(self) -> None:
        self._closed = True


class HumanPeer:
    """The tester's side of one call."""

    role = HUMAN_ROLE
    in_process = False

    def __init__(self, *, modality: str, label: str = "human tester", measure: bool = False) -> None:
        self.modality = check_modality(modality)
        self.label = label
        self.track = CallAudioTrack(measure=measure) if modality == "voice" else None
        self.inbound_delays: deque[float] | None = deque(maxlen=100_000) if measure else None
        """Seconds each browser frame waited between aiortc and the bridge (bench/human_relay.py)."""
        self.exit_text: str | None = None
        self.connected = asyncio.Event()
        """Set when the media path is up (voice) or at once (text): the call may start."""
        self.live = asyncio.Event()
        """Set when the bridge opens the conversation (the agent is about to greet)."""
        self._inbox: asyncio.Queue[tuple[Item, float]] = asyncio.Queue()
        self._live = False
        self._pc: Any = None
        self._tasks: set[asyncio.Task] = set()
        self.dropped_inbound = 0
        if modality == "text":
            self.connected.set()

    # --- the bridge's side ------------------------------------------------------------------------

    async def connect(self, *, conversation: bool = False) -> _HumanChannel:
        """The conversation connection; from now on the tester's audio is queued for the bridge."""
        self._live = True
        self.live.set()
        return _HumanChannel(self)

    # --- the tester's side ------------------------------------------------------------------------

    def say(self, text: str) -> str | None:
        """One typed message as a finished user utterance; returns why it was refused, if it was."""
        if self.modality != "text":
            return "this call is in voice; speak instead"
        if not isinstance(text, str) or not text.strip():
            return "the message is empty"
        if len(text) > MAX_MESSAGE_CHARS:
            return f"the message is longer than {MAX_MESSAGE_CHARS} characters"
        if not self._live:
            return "the agent is not on the line yet"
        if self.exit_text is not None:
            return "the call has ended"
        text = " ".join(text.split())
        for item in (rtvi.bot_started_speaking(), rtvi.bot_tts_text(text), rtvi.utterance("user", text),
                     rtvi.bot_stopped_speaking()):
            self._put(item)
        return None

    def hang_up(self, why: str = HUNG_UP) -> bool:
        """The passenger leaves (once); False when the call had already been left."""
        if self.exit_text is not None:
            return False
        self.exit_text = why
        self.connected.set()  # a call still waiting for its media path stops waiting
        self._put(rtvi.exit_message(why))
        return True

    def push_audio(self, pcm: bytes, sample_rate: int, *, received_at: float | None = None) -> None:
        """One mono s16le microphone frame; dropped before the conversation or when the bridge lags.
        ``received_at`` (perf_counter) is when the frame left the decoder, for the relay figures."""
        if not self._live or self.exit_text is not None:
            return
        if self._inbox.qsize() >= MAX_QUEUED_ITEMS:
            self.dropped_inbound += 1
            return
        self._put(AudioChunk(pcm, sample_rate), received_at)

    def _put(self, item: Item, at: float | None = None) -> None:
        self._inbox.put_nowait((item, time.perf_counter() if at is None else at))

    # --- WebRTC -----------------------------------------------------------------------------------

    def attach(self, pc: Any) -> None:
        """Wire a fresh RTCPeerConnection (before the offer is applied): our outgoing track, the
        browser's microphone, and connection loss as a hang-up."""
        if self.track is None:
            raise ValueError("a text call has no WebRTC media")
        self._pc = pc
        prefer_opus(pc, pc.addTrack(self.track))  # the track hands aiortc Opus packets

        @pc.on("track")
        def on_track(track: Any) -> None:
            if track.kind == "audio":
                self._spawn(self._read_microphone(track))

        @pc.on("connectionstatechange")
        async def on_state() -> None:
            state = pc.connectionState
            if state == "connected":
                self.connected.set()
            elif state in ("failed", "closed"):
                self.hang_up(f"The caller's connection {state}.")

    async def _read_microphone(self, track: Any) -> None:
        from aiortc.mediastreams import MediaStreamError

        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                self.hang_up("The caller's audio ended.")
                return
            received_at = time.perf_counter()
            samples = frame.to_ndarray().reshape(-1)
            channels = len(frame.layout.channels)
            if channels > 1:
                samples = samples.reshape(-1, channels).mean(axis=1)
            self.push_audio(samples.astype("<i2").tobytes(), frame.sample_rate, received_at=received_at)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        """End the tester's side: stop reading the microphone and close the peer connection."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.track is not None:
            self.track.stop()
        if self._pc is not None:
            try:
                await self._pc.close()
            except Exception:  # closing a half-negotiated connection may fail; it is gone anyway
                logger.debug("closing the call's peer connection failed", exc_info=True)
