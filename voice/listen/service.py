"""Connecting a browser to a live call: find the call, give the browser its own mix as a WebRTC
track, and tear the connection down when the call ends, the browser leaves, or ICE never
connects. Errors come back as ``OfferError`` results (voice.webrtc.offer), never raised."""
from __future__ import annotations

import asyncio
import time

from aiortc import RTCPeerConnection

from voice.listen import registry, remote
from voice.listen.mixer import ListenerMix
from voice.listen.track import LiveMixTrack
from voice.webrtc.offer import Answer, OfferError, answer_offer, check_offer
from voice.webrtc.opus import prefer_opus

CONNECT_TIMEOUT_S = 20.0
POLL_S = 0.25
FULL = "This call has ended or already has the most listeners."
NOT_LIVE_YET = OfferError("This scenario's call is not live: it has not started yet or has already ended.",
                          status=404)
"""Worth asking again: a scenario is announced a moment before its bots are ready."""
NOT_REACHABLE = OfferError(
    "This run executes in another process (run_eval in a shell, or a Celery worker) and the site has no "
    "shared Redis channel layer (REDIS_URL), so its calls cannot be heard here.", status=404)

_open: set[RTCPeerConnection] = set()
"""Strong references: aiortc peer connections live only as long as someone holds them."""
_supervisors: set[asyncio.Future] = set()


async def listen_offer(key: registry.LiveKey, payload: object, *, run_is_here: bool = True) -> Answer | OfferError:
    """Answer a browser's recvonly offer with the live mix of the call registered under ``key``.

    ``run_is_here``: whether this process coordinates the run, so that a call not registered yet
    may still start here (the alternative, without a Redis relay, is ``NOT_REACHABLE``)."""
    checked = check_offer(payload)  # before any lookup: garbage never reaches another process
    if isinstance(checked, OfferError):
        return checked
    call = registry.find(key)
    if call is None:
        found = await remote.join(key)  # the call may run in a shell or worker process
        if found is None:
            return NOT_LIVE_YET if run_is_here or remote.relay_layer() is not None else NOT_REACHABLE
        if isinstance(found, str):
            return OfferError(FULL, status=409)
        call = found
    listener = call.add_listener()
    if listener is None:
        return OfferError(FULL, status=409)
    track = LiveMixTrack(listener)

    def attach(pc: RTCPeerConnection) -> None:
        prefer_opus(pc, pc.addTrack(track))  # the track hands aiortc Opus packets

    result = await answer_offer(payload, setup=attach)
    if isinstance(result, OfferError):
        call.remove_listener(listener)
        track.stop()
        return result
    _watch(result.pc, call, listener, track)
    return result


def open_count() -> int:
    """Listening connections this process holds (tests, bench)."""
    return len(_open)


def _watch(pc: RTCPeerConnection, call: registry.LiveCall, listener: ListenerMix, track: LiveMixTrack) -> None:
    """Close the connection when the browser leaves, ICE fails or never connects, or the call
    ends (noticed by polling: the call may end on another thread's event loop)."""
    _open.add(pc)
    finished = asyncio.Event()

    def finish() -> None:
        if finished.is_set():
            return
        finished.set()
        call.remove_listener(listener)
        track.stop()
        _open.discard(pc)
        asyncio.ensure_future(pc.close())

    @pc.on("connectionstatechange")
    def on_state() -> None:
        if pc.connectionState in ("failed", "closed"):
            finish()

    track.on("ended", finish)

    async def supervise() -> None:
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        while not finished.is_set():
            if listener.closed or (pc.connectionState != "connected" and time.monotonic() > deadline):
                finish()
                return
            try:
                await asyncio.wait_for(finished.wait(), POLL_S)
            except TimeoutError:
                pass

    _supervisors.add(task := asyncio.ensure_future(supervise()))
    task.add_done_callback(_supervisors.discard)
