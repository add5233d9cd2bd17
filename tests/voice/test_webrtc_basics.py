"""voice.webrtc: ICE configuration, loopback candidates, and the SDP offer helper, with a real
aiortc peer over loopback standing in for the browser."""
from __future__ import annotations

import asyncio
import fractions

import aioice.ice
import numpy as np
import pytest
from aiortc import MediaStreamTrack, RTCPeerConnection, RTCSessionDescription
from av import AudioFrame

from tests.voice.listen_helpers import browser_offer
from voice.webrtc import config
from voice.webrtc.config import IceConfigError, allow_loopback_candidates, ice_servers, parse_ice_servers
from voice.webrtc.offer import MAX_SDP_CHARS, Answer, OfferError, answer_offer, check_offer


class ToneTrack(MediaStreamTrack):
    """20 ms frames of a 440 Hz tone at 48 kHz, paced in real time."""

    kind = "audio"

    def __init__(self) -> None:
        super().__init__()
        self._pts = 0

    async def recv(self) -> AudioFrame:
        await asyncio.sleep(0.02)
        t = (np.arange(960) + self._pts) / 48_000
        samples = (np.sin(2 * np.pi * 440 * t) * 8000).astype(np.int16).reshape(1, -1)
        frame = AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        frame.sample_rate, frame.pts, frame.time_base = 48_000, self._pts, fractions.Fraction(1, 48_000)
        self._pts += 960
        return frame


@pytest.fixture
def restore_host_addresses():
    """Start from aioice's own function (another test may have patched it already)."""
    before = aioice.ice.get_host_addresses
    aioice.ice.get_host_addresses = getattr(before, "evasite_original", before)
    yield
    aioice.ice.get_host_addresses = before


def test_ice_servers_parse_urls_and_credentials():
    servers = parse_ice_servers(
        '[{"urls": "stun:stun.example.org:3478"},'
        ' {"urls": ["turn:t.example.org:3478"], "username": "u", "credential": "c"}]'
    )
    assert [s.urls for s in servers] == [["stun:stun.example.org:3478"], ["turn:t.example.org:3478"]]
    assert (servers[1].username, servers[1].credential) == ("u", "c")
    assert parse_ice_servers("[]") == [] and parse_ice_servers("") == []


@pytest.mark.parametrize(
    "raw",
    ["{not json", '{"urls": "stun:x"}', '["stun:x"]', '[{"urls": []}]', '[{"urls": "http://x"}]',
     '[{"urls": "stun:x", "password": "p"}]', '[{"urls": "turn:x", "username": 5}]'],
)
def test_ice_servers_refuse_malformed_config(raw):
    with pytest.raises(IceConfigError):
        parse_ice_servers(raw)


def test_ice_servers_default_empty_and_read_from_settings(settings):
    assert ice_servers() == []
    settings.EVASITE_ICE_SERVERS = '[{"urls": "stun:127.0.0.1:3478"}]'
    assert [s.urls for s in ice_servers()] == [["stun:127.0.0.1:3478"]]


def test_loopback_patch_offers_127_and_is_idempotent(restore_host_addresses):
    assert "127.0.0.1" not in aioice.ice.get_host_addresses(use_ipv4=True, use_ipv6=False)
    allow_loopback_candidates()
    patched = aioice.ice.get_host_addresses
    allow_loopback_candidates()
    assert aioice.ice.get_host_addresses is patched
    addresses = aioice.ice.get_host_addresses(use_ipv4=True, use_ipv6=False)
    assert addresses.count(config.LOOPBACK) == 1 and addresses[0] == config.LOOPBACK
    assert config.LOOPBACK not in aioice.ice.get_host_addresses(use_ipv4=False, use_ipv6=True)


async def test_check_offer_refuses_bad_input():
    pc, good = await browser_offer()
    await pc.close()
    assert isinstance(check_offer(good), RTCSessionDescription)
    cases = {
        "not a dict": ["sdp"],
        "answer type": {**good, "type": "answer"},
        "missing sdp": {"type": "offer"},
        "empty sdp": {"sdp": "  ", "type": "offer"},
        "not sdp": {"sdp": "hello", "type": "offer"},
        "garbage after v=0": {"sdp": "v=0\r\nm=audio x\r\n", "type": "offer"},
        "video only": {"sdp": good["sdp"].replace("m=audio", "m=video"), "type": "offer"},
        "no fingerprint": {"sdp": "\r\n".join(line for line in good["sdp"].split("\r\n") if not line.startswith("a=fingerprint")), "type": "offer"},
    }
    for name, payload in cases.items():
        result = check_offer(payload)
        assert isinstance(result, OfferError) and result.status == 400, name
    huge = check_offer({"sdp": "v=0\r\n" + "a=x\r\n" * MAX_SDP_CHARS, "type": "offer"})
    assert isinstance(huge, OfferError) and huge.status == 413


async def test_answer_offer_connects_and_carries_audio():
    client, offer = await browser_offer()
    frames: list[AudioFrame] = []
    got_enough = asyncio.Event()

    @client.on("track")
    def on_track(track):
        async def pull():
            while len(frames) < 10:
                frames.append(await track.recv())
            got_enough.set()
        asyncio.ensure_future(pull())

    answer = await answer_offer(offer, setup=lambda pc: pc.addTrack(ToneTrack()) and None)
    assert isinstance(answer, Answer), answer
    assert answer.as_json()["type"] == "answer" and "127.0.0.1" in answer.sdp
    try:
        await client.setRemoteDescription(RTCSessionDescription(**answer.as_json()))
        await asyncio.wait_for(got_enough.wait(), 10)
        assert frames[-1].sample_rate == 48_000
        assert np.abs(frames[-1].to_ndarray()).max() > 1000
    finally:
        await client.close()
        await answer.pc.close()


async def test_answer_offer_reports_setup_failure_and_closes_pc():
    client, offer = await browser_offer()
    seen: list[RTCPeerConnection] = []

    def broken(pc):
        seen.append(pc)
        raise RuntimeError("no such call")

    result = await answer_offer(offer, setup=broken)
    await client.close()
    assert isinstance(result, OfferError) and result.status == 500 and "no such call" in result.message
    assert seen[0].connectionState == "closed"
