"""Live human calls in this server process: who owns each, its peer, and the task running it.

A call is created by its page's WebSocket (``consumers.CallConsumer``), gets its media through
the signalling view (voice) or none at all (text), and is run by the scoring service named in
``settings.EVASITE_HUMAN_CALL_RUNNER`` (voice never imports scoring). Everything the page shows
(state, turns, the timer, the end) is published to the call's listeners in order.
"""
from __future__ import annotations

import asyncio
import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from voice.human.peer import HumanPeer
from voice.protocol import rtvi

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT = 30.0
"""Seconds a voice call waits for the browser's offer and ICE before it is given up."""
TICK_SECONDS = 1.0
KEPT_ENDED = 100
"""Ended calls remembered (a late or replayed offer is then refused as 'ended', not 'unknown')."""

SPEAKERS = {"agent": "Agent", "user": "You"}


class CallError(Exception):
    """A request about a call was refused; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(eq=False)
class Call:
    owner_id: int
    scenario_name: str
    modality: str
    agent: dict[str, Any]
    peer: HumanPeer
    id: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    state: str = "connecting"
    """connecting -> live -> ended (or failed)."""
    offered: bool = False
    started_at: float | None = None
    run_id: int | None = None
    """The call's ``Run`` once the runner has opened it (its run page and Listen use it)."""
    outcome: dict[str, Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    listeners: set[asyncio.Queue] = field(default_factory=set)
    task: asyncio.Task | None = None

    def may_control(self, user: Any) -> bool:
        """Only the call's owner, or staff, may offer, hang up or watch."""
        return bool(getattr(user, "is_authenticated", False)) and (user.pk == self.owner_id or user.is_staff)

    @property
    def ended(self) -> bool:
        return self.state in ("ended", "failed")

    # --- events -----------------------------------------------------------------------------------

    def publish(self, event: dict[str, Any]) -> None:
        if event["type"] in ("turn", "state", "ended", "failed"):
            self.history.append(event)  # a watcher who joins late still sees the whole call
        for queue in list(self.listeners):
            queue.put_nowait(event)

    def listen(self) -> asyncio.Queue:
        queue: asyncio.Queue = asyncio.Queue()
        for event in self.history:
            queue.put_nowait(event)
        self.listeners.add(queue)
        return queue

    def unlisten(self, queue: asyncio.Queue) -> None:
        self.listeners.discard(queue)

    def _turn(self, role: str, text: str) -> None:
        self.publish({"type": "turn", "role": role, "speaker": SPEAKERS.get(role, role), "text": text})

    def _state(self, state: str) -> None:
        self.state = state
        self.publish({"type": "state", "state": state})

    # --- signalling -------------------------------------------------------------------------------

    async def offer(self, payload: Any) -> dict[str, str]:
        """Answer the browser's SDP offer; one successful offer per call, ever."""
        from voice.webrtc.offer import OfferError, answer_offer

        if self.modality != "voice":
            raise CallError("this call is in text modality and takes no offer", 409)
        if self.ended or self.peer.exit_text is not None:
            raise CallError("this call has ended", 409)
        if self.offered:
            raise CallError("this call already has a connection", 409)
        self.offered = True  # set before awaiting: a concurrent second offer is refused too
        answer = await answer_offer(payload, setup=self.peer.attach)
        if isinstance(answer, OfferError):
            self.offered = False  # a refused offer leaves the call waiting for a good one
            raise CallError(answer.message, answer.status)
        return answer.as_json()

    # --- running ----------------------------------------------------------------------------------

    def start(self) -> None:
        self.task = asyncio.ensure_future(self._run())
        _running.add(self.task)
        self.task.add_done_callback(_running.discard)

    async def _run(self) -> None:
        ticker = asyncio.ensure_future(self._tick())
        try:
            try:
                await asyncio.wait_for(self.peer.connected.wait(), CONNECT_TIMEOUT)
            except TimeoutError:
                self._fail("The browser's audio connection did not come up; try again or type instead.")
                return
            if self.peer.exit_text is not None:  # hung up (or the media failed) before the call began
                self._fail("The call ended before it was connected.")
                return
            runner = import_string(settings.EVASITE_HUMAN_CALL_RUNNER)
            try:
                self.outcome = await runner(
                    scenario_name=self.scenario_name, owner_id=self.owner_id, modality=self.modality,
                    agent=self.agent, peer=_HandshakeFirstPeer(self.peer), on_turn=self._turn,
                    on_open=self._opened,
                )
            except Exception as exc:
                logger.warning("human call %s failed: %s", self.id, exc)
                self._fail(str(exc) or type(exc).__name__)
                return
            self.state = "ended"
            self.publish({"type": "ended", **self.outcome})
        finally:
            ticker.cancel()
            await asyncio.gather(ticker, return_exceptions=True)
            await self.peer.aclose()
            _remember_ended(self)

    def _opened(self, run_id: int) -> None:
        self.run_id = run_id
        self.publish({"type": "run", "run_id": run_id})

    def _fail(self, message: str) -> None:
        self.state = "failed"
        self.publish({"type": "failed", "message": message})

    async def _tick(self) -> None:
        """Publish ``live`` when the bridge opens the conversation, then the elapsed time."""
        await self.peer.live.wait()
        self.started_at = time.monotonic()
        self._state("live")
        while True:
            self.publish({"type": "tick", "elapsed": round(time.monotonic() - self.started_at)})
            await asyncio.sleep(TICK_SECONDS)

    def hang_up(self, why: str) -> bool:
        return self.peer.hang_up(why)


class _HandshakeFirstChannel:
    """The bridge's conversation channel to the tester, answering the handshake before anything
    the tester did meanwhile.

    Why: the bridge skips every item that arrives before ``bot-ready``, and a tester who hung up
    while the agent was being set up has already queued their exit; skipped, it would leave the
    call (and a voice pipeline) running until the inactivity timeout."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._ready: list[dict[str, Any]] = []

    @property
    def closed(self) -> bool:
        return self._inner.closed

    async def send(self, item: Any) -> None:
        if isinstance(item, dict) and rtvi.message_type(item) == "client-ready" and not self._inner.closed:
            self._ready.append(rtvi.bot_ready())
            return
        await self._inner.send(item)

    async def recv(self) -> Any:
        if self._ready:
            return self._ready.pop(0)
        return await self._inner.recv()

    async def close(self) -> None:
        await self._inner.close()


class _HandshakeFirstPeer:
    """The call's ``HumanPeer`` as the runner's user endpoint, its channels wrapped as above."""

    in_process = False

    def __init__(self, peer: HumanPeer) -> None:
        self._peer = peer
        self.role = peer.role  # what a person cannot do, for the engine
        self.label = peer.label
        self.modality = peer.modality

    async def connect(self, *, conversation: bool = False) -> _HandshakeFirstChannel:
        return _HandshakeFirstChannel(await self._peer.connect(conversation=conversation))


_calls: dict[str, Call] = {}
_ended_order: list[str] = []
_running: set[asyncio.Task] = set()  # strong references: the loop keeps only weak ones


def create_call(*, owner_id: int, scenario_name: str, modality: str, agent: dict[str, Any],
                measure: bool = False) -> Call:
    call = Call(owner_id=owner_id, scenario_name=scenario_name, modality=modality, agent=agent,
                peer=HumanPeer(modality=modality, measure=measure))
    _calls[call.id] = call
    return call


def get_call(call_id: str) -> Call | None:
    return _calls.get(call_id)


def live_calls() -> list[Call]:
    return [call for call in _calls.values() if not call.ended]


def hosts_run(run_id: int) -> bool:
    """Whether a live call of this process is run ``run_id`` (so Listen may wait for its audio)."""
    return any(call.run_id == run_id for call in live_calls())


def _remember_ended(call: Call) -> None:
    _ended_order.append(call.id)
    while len(_ended_order) > KEPT_ENDED:
        _calls.pop(_ended_order.pop(0), None)
