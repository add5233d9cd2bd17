"""The human call's pure parts: user turns from the agent's events, control-message checks, the
tester's peer, and the brief (never the gold data)."""
from __future__ import annotations

import asyncio
import json

import pytest

from voice.bridge.conversation import ConversationState
from voice.human.control import Control, parse_control
from voice.human.peer import HumanPeer
from voice.human.turns import HumanTurnBuilder, forget_self_heard
from voice.protocol import rtvi
from voice.protocol.channel import AudioChunk

SEED = "eva_airline__voluntary_date_change"


def _replay(events: list[dict]) -> ConversationState:
    """Feed agent events through the builder into the bridge's bookkeeping, as the engine does."""
    state = ConversationState(modality="voice")
    builder = HumanTurnBuilder()
    for now, event in enumerate(events):
        for user_event in builder.feed(event):
            state.on_message("user", user_event, float(now))
        state.on_message("agent", event, float(now))
    return state


def test_user_turns_come_from_the_agents_events():
    state = _replay([
        rtvi.bot_started_speaking(), rtvi.bot_tts_text("How can I help?"), rtvi.bot_stopped_speaking(),
        rtvi.user_started_speaking(), rtvi.user_transcription("I need to"), rtvi.user_stopped_speaking(),
        rtvi.user_started_speaking(), rtvi.user_transcription("change my flight"), rtvi.user_stopped_speaking(),
        rtvi.bot_started_speaking(), rtvi.bot_tts_text("Sure."), rtvi.bot_stopped_speaking(),
    ])
    turns = [(t["role"], t["text"]) for t in state.transcript.turns]
    # A new utterance after a transcribed one finalises it (§7.3); the agent speaking finalises the rest.
    assert turns == [("agent", "How can I help?"), ("user", "I need to"), ("user", "change my flight"),
                     ("agent", "Sure.")]
    assert state.transcript.turns[2]["heard"] == "change my flight"  # what the agent heard is the turn
    forget_self_heard("user", state.transcript.turns, state.heard)  # ... so it is no separate "heard" text
    assert "heard" not in state.transcript.turns[2] and state.heard[2] is None


def test_partial_transcriptions_and_silent_starts_add_nothing():
    state = _replay([
        rtvi.user_started_speaking(), rtvi.user_transcription("hel", final=False),
        rtvi.user_started_speaking(), rtvi.user_transcription("hello there"),
        rtvi.bot_started_speaking(), rtvi.bot_tts_text("Hi."), rtvi.bot_stopped_speaking(),
    ])
    assert [(t["role"], t["text"]) for t in state.transcript.turns] == [("user", "hello there"), ("agent", "Hi.")]


def test_words_decoded_after_the_agent_began_stay_in_the_turn_they_were_spoken_in():
    # The tester talks as the greeting starts: the VAD fires first, the ASR's words come later.
    state = _replay([
        rtvi.user_started_speaking(), rtvi.bot_started_speaking(), rtvi.user_stopped_speaking(),
        rtvi.user_transcription("hi I need to change my flight"), rtvi.bot_tts_text("How can I help?"),
        rtvi.bot_stopped_speaking(),
    ])
    assert [(t["role"], t["text"]) for t in state.transcript.turns] == [
        ("user", "hi I need to change my flight"), ("agent", "How can I help?")]
    user = next(s for s in state.transcript.segments if s["role"] == "user")
    assert user["start"] == 0.0, "the turn starts when the tester started talking"


def test_a_wordless_sound_before_the_greeting_is_no_turn():
    state = _replay([
        rtvi.user_started_speaking(), rtvi.user_stopped_speaking(),  # a click on the line
        rtvi.bot_started_speaking(), rtvi.bot_tts_text("How can I help?"), rtvi.bot_stopped_speaking(),
        rtvi.user_started_speaking(), rtvi.user_stopped_speaking(), rtvi.user_transcription("I need to"),
        rtvi.bot_started_speaking(), rtvi.bot_tts_text("Sure."), rtvi.bot_stopped_speaking(),
    ])
    assert [(t["role"], t["text"]) for t in state.transcript.turns] == [
        ("agent", "How can I help?"), ("user", "I need to"), ("agent", "Sure.")]
    user_turn = [s for s in state.transcript.segments if s["role"] == "user" and s["text"] == "I need to"]
    assert user_turn[0]["start"] == 5.0, "the turn starts with the speech, not the earlier click"


@pytest.mark.parametrize("raw, problem", [
    ("", "not valid JSON"), ("{", "not valid JSON"), ("[]", "JSON object"), ('{"type": 3}', "unknown"),
    ('{"type": "start", "modality": "video"}', "modality"),
    ('{"type": "start", "agent": {"url": "http://host"}}', "ws://"),
    ('{"type": "start", "agent": {"llm_url": "ftp://host"}}', "http://"),
    ('{"type": "start", "agent": {"llm_url": "http://127.0.0.1:1/v1"}}', "model name"),
    ('{"type": "start", "agent": {"model": "m", "api_key_name": "sk-123 456"}}', "environment variable"),
    ('{"type": "start", "agent": {"secret": "x"}}', "unknown agent fields"),
    ('{"type": "start", "agent": "gold-replay"}', "object"),
    ('{"type": "say", "text": null}', "string"),
    ('{"type": "offer"}', "SDP"),
    ('{"type": "offer", "sdp": "  "}', "SDP"),
    ('{"type": "offer", "sdp": {"type": "offer"}}', "SDP"),
])
def test_bad_control_messages_are_refused_with_a_reason(raw, problem):
    result = parse_control(raw)
    assert isinstance(result, str) and problem in result
    assert isinstance(parse_control(b"bytes"), str) and isinstance(parse_control("x" * 65_000), str)


def test_good_control_messages():
    assert parse_control('{"type": "hangup"}') == Control("hangup")
    assert parse_control('{"type": "offer", "sdp": "v=0\\r\\n"}') == Control("offer", sdp="v=0\r\n")
    start = parse_control(json.dumps({"type": "start", "modality": "text",
                                      "agent": {"model": "m", "llm_url": "http://127.0.0.1:9/v1", "api_key_name": ""}}))
    assert start == Control("start", modality="text", agent={"model": "m", "llm_url": "http://127.0.0.1:9/v1"})
    url_agent = parse_control(json.dumps({"type": "start", "agent": {"url": "ws://127.0.0.1:8765", "model": "x"}}))
    assert url_agent.agent == {"url": "ws://127.0.0.1:8765"}  # a bot server brings its own model


async def test_the_peer_turns_typing_and_hanging_up_into_bridge_items():
    peer = HumanPeer(modality="text")
    assert peer.say("too early") == "the agent is not on the line yet"
    channel = await peer.connect(conversation=True)
    assert peer.live.is_set() and peer.connected.is_set()
    await channel.send(rtvi.client_ready())
    assert rtvi.message_type(await channel.recv()) == "bot-ready"
    assert peer.say("   ") == "the message is empty"
    assert peer.say("x" * 5000).startswith("the message is longer")
    assert peer.say("  my   code is  Z K 3 ") is None
    kinds = [rtvi.message_type(await channel.recv()) for _ in range(4)]
    assert kinds == ["bot-started-speaking", "bot-tts-text", "utterance", "bot-stopped-speaking"]
    assert peer.hang_up() is True and peer.hang_up() is False
    exit_item = await channel.recv()
    assert rtvi.is_exit_text(rtvi.server_text(exit_item))
    assert peer.say("after") == "the call has ended"


async def test_voice_audio_is_dropped_until_the_conversation_and_bounded_after():
    peer = HumanPeer(modality="voice")
    peer.push_audio(b"\x01\x00" * 960, 48000)  # during setup: nobody listens yet
    channel = await peer.connect(conversation=True)
    peer.push_audio(b"\x02\x00" * 960, 48000)
    item = await asyncio.wait_for(channel.recv(), 1)
    assert isinstance(item, AudioChunk) and item.pcm[:2] == b"\x02\x00"
    for _ in range(600):
        peer.push_audio(b"\x00\x00" * 960, 48000)
    assert peer.dropped_inbound == 100  # a stalled bridge never grows the queue without bound
    for _ in range(2):  # 32 ms of the agent's audio: one 20 ms packet for the browser
        await channel.send(AudioChunk(b"\x00\x00" * 256, 16000))
    packet = await asyncio.wait_for(peer.track.recv(), 1)
    assert packet.pts == 0 and packet.duration == 960
    await peer.aclose()


async def test_the_callers_track_hands_aiortc_contiguous_opus_packets_of_the_agents_audio():
    import av
    import numpy as np

    from tests.voice.listen_helpers import band_power, tone
    from voice.human.track import CallAudioTrack

    track = CallAudioTrack(measure=True)
    pcm = tone(440, 16000, 0.8)  # 50 frames: what the track queues at most
    for start in range(0, len(pcm), 512):  # the relay's 16 ms frames at the agent's 16 kHz
        track.push(AudioChunk(pcm[start:start + 512], 16000))
    packets = []
    while len(packets) < 38:  # 0.8 s is 40 packets, less the encoder's look-ahead
        packets.append(await asyncio.wait_for(track.recv(), 1))
    assert [p.pts for p in packets] == [960 * i for i in range(38)]
    assert all(p.time_base.denominator == 48000 for p in packets)
    decoder = av.CodecContext.create("libopus", "r")  # stereo, as a browser's decoder is
    decoded = np.concatenate([f.to_ndarray().reshape(-1, len(f.layout.channels))[:, 0]
                              for p in packets for f in decoder.decode(p)])
    assert band_power(decoded[4800:], 48000, 440) > 0.8, "the browser hears the agent's tone"
    assert len(track.delays) == 38 and max(track.delays) < 1.0
    track.stop()


def test_the_brief_tells_the_passengers_facts_and_never_the_gold():
    from scenarios.registry import get_eval_scenario
    from tests.gold import leaked_gold
    from voice.human.brief import passenger_brief

    scenario = get_eval_scenario(SEED)
    brief = passenger_brief(scenario)
    text = json.dumps(brief.__dict__, default=str)
    assert "Rodriguez" in text and "Z, K, three, F, F, W" in text and brief.steps and brief.goal
    assert not leaked_gold(scenario, text)  # neither the hash nor the flight, seat or journeys it writes
    gold_writes = [json.dumps(v) for v in scenario.expected_scenario_db.get("reservations", {}).values()]
    assert not any(record in text for record in gold_writes)


def test_a_human_call_runs_in_this_process_whatever_the_sites_executor(settings):
    from scoring.runs.human_run import AgentChoice, call_options

    settings.EVASITE_EXECUTOR = "celery"  # a worker could not reach the tester's peer
    options = call_options(scenario_name=SEED, modality="voice", agent=AgentChoice(model="listening"))
    assert options.executor == "local" and options.max_auto_retries == 0


async def test_an_offer_without_opus_is_refused_and_leaves_no_connection():
    from aiortc import RTCPeerConnection, RTCRtpSender

    from voice.webrtc.config import allow_loopback_candidates
    from voice.webrtc.offer import Answer, OfferError, answer_offer

    allow_loopback_candidates()
    browser = RTCPeerConnection()
    transceiver = browser.addTransceiver("audio", direction="sendrecv")
    transceiver.setCodecPreferences([c for c in RTCRtpSender.getCapabilities("audio").codecs
                                     if c.mimeType.lower() == "audio/pcmu"])
    await browser.setLocalDescription(await browser.createOffer())
    peer = HumanPeer(modality="voice")
    try:
        refused = await answer_offer({"sdp": browser.localDescription.sdp, "type": "offer"}, setup=peer.attach)
        assert isinstance(refused, OfferError) and refused.status == 400, refused
        assert peer._pc.connectionState == "closed"  # the call's half-made connection is gone
        opus_browser = RTCPeerConnection()
        opus_browser.addTransceiver("audio", direction="sendrecv")
        await opus_browser.setLocalDescription(await opus_browser.createOffer())
        answer = await answer_offer({"sdp": opus_browser.localDescription.sdp, "type": "offer"}, setup=peer.attach)
        assert isinstance(answer, Answer) and "opus/48000" in answer.sdp and "PCMU" not in answer.sdp
        await opus_browser.close()
    finally:
        await browser.close()
        await peer.aclose()
