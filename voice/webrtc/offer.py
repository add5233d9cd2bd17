"""Turning a browser's SDP offer into an RTCPeerConnection and its answer. The offer comes from
outside, so this one entry point checks it (size, type, parseable, has audio) and answers every bad
input with an error result instead of raising; a failure leaves no peer connection open."""
from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.sdp import SessionDescription

from voice.webrtc.config import allow_loopback_candidates, rtc_configuration

# A browser's audio-only offer is a few kB; anything near this is not one.
MAX_SDP_CHARS = 32_000
# Gathering host candidates over loopback takes milliseconds; bound it for odd networks.
ANSWER_TIMEOUT_S = 10.0

PeerSetup = Callable[[RTCPeerConnection], "Awaitable[None] | None"]


@dataclass(frozen=True)
class OfferError:
    """Why an offer was refused; ``status`` is the HTTP status a view should answer with."""

    message: str
    status: int = 400


@dataclass(frozen=True)
class Answer:
    """An open peer connection and the answer to send back to the browser."""

    pc: RTCPeerConnection
    sdp: str
    type: str

    def as_json(self) -> dict[str, str]:
        return {"sdp": self.sdp, "type": self.type}


def check_offer(payload: Any) -> RTCSessionDescription | OfferError:
    """Validate ``{"sdp": ..., "type": "offer"}`` without touching the network."""
    if not isinstance(payload, dict):
        return OfferError("expected a JSON object with sdp and type")
    sdp, kind = payload.get("sdp"), payload.get("type")
    if kind != "offer":
        return OfferError('type must be "offer"')
    if not isinstance(sdp, str) or not sdp.strip():
        return OfferError("sdp must be a non-empty string")
    if len(sdp) > MAX_SDP_CHARS:
        return OfferError(f"sdp is longer than {MAX_SDP_CHARS} characters", status=413)
    if not sdp.startswith("v=0"):
        return OfferError("sdp does not start with v=0")
    try:
        parsed = SessionDescription.parse(sdp)
    except Exception as exc:  # the parser raises many types on garbage
        return OfferError(f"sdp could not be parsed: {type(exc).__name__}")
    if not any(media.kind == "audio" for media in parsed.media):
        return OfferError("sdp offers no audio")
    if any(not media.ice.usernameFragment or not (media.dtls and media.dtls.fingerprints)
           for media in parsed.media):
        return OfferError("sdp lacks ICE credentials or DTLS fingerprints")
    return RTCSessionDescription(sdp=sdp, type="offer")


async def answer_offer(payload: Any, setup: PeerSetup | None = None) -> Answer | OfferError:
    """Build a peer connection for a browser's offer and return its answer, or an error.

    ``setup(pc)`` runs before the offer is applied, so it can add outgoing tracks and register
    ``on("track")`` handlers; if it raises, the error is reported and the connection closed."""
    offer = check_offer(payload)
    if isinstance(offer, OfferError):
        return offer
    allow_loopback_candidates()
    pc = RTCPeerConnection(configuration=rtc_configuration())
    try:
        if setup is not None:
            result = setup(pc)
            if inspect.isawaitable(result):
                await result
    except Exception as exc:
        await pc.close()
        return OfferError(f"could not set up the call: {exc or type(exc).__name__}", status=500)
    try:
        await asyncio.wait_for(_negotiate(pc, offer), ANSWER_TIMEOUT_S)
    except asyncio.TimeoutError:
        await pc.close()
        return OfferError("timed out building the answer", status=504)
    except Exception as exc:  # a bad offer can fail deep inside aiortc; never leak the pc
        await pc.close()
        return OfferError(f"offer rejected: {exc or type(exc).__name__}")
    local = pc.localDescription
    return Answer(pc=pc, sdp=local.sdp, type=local.type)


async def _negotiate(pc: RTCPeerConnection, offer: RTCSessionDescription) -> None:
    await pc.setRemoteDescription(offer)
    await pc.setLocalDescription(await pc.createAnswer())
