"""The listen-in mix, tap and track without a network: both sides in the mix, bounded buffers,
a tap that forwards untouched and never waits on listeners, and tracks that end with the call."""
from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest
from aiortc.mediastreams import MediaStreamError

from tests.voice.listen_helpers import band_power, tone
from voice.audio.pcm import StreamResampler
from voice.listen import registry
from voice.listen.mixer import FRAME_SAMPLES, MAX_BUFFER_SECONDS, MIX_RATE, ListenerMix
from voice.listen.tap import LiveTap, open_tap
from voice.listen.track import LiveMixTrack
from voice.protocol.channel import AudioChunk


def frames_of(pcm: bytes, rate: int, seconds: float = 0.016) -> list[AudioChunk]:
    step = int(rate * seconds) * 2
    return [AudioChunk(pcm[i:i + step], rate) for i in range(0, len(pcm), step)]


def test_mix_holds_both_sides_and_is_silent_without_audio():
    mix = ListenerMix()
    assert not mix.pull().any(), "nobody spoke: silence"
    agent, user = StreamResampler(MIX_RATE), StreamResampler(MIX_RATE)
    for chunk in frames_of(tone(440, 16_000, 0.3), 16_000):
        mix.push("agent", agent.resample(chunk.pcm, chunk.sample_rate))
    for chunk in frames_of(tone(1000, 24_000, 0.3), 24_000):
        mix.push("user", user.resample(chunk.pcm, chunk.sample_rate))
    out = np.concatenate([mix.pull() for _ in range(10)])
    assert out.size == 10 * FRAME_SAMPLES
    assert band_power(out, MIX_RATE, 440) > 0.3 and band_power(out, MIX_RATE, 1000) > 0.3


def test_mix_clips_instead_of_wrapping():
    mix = ListenerMix()
    loud = np.full(3 * FRAME_SAMPLES, 30_000, dtype=np.int16)
    mix.push("agent", loud)
    mix.push("user", loud)
    assert mix.pull().min() == 32767


def test_buffers_are_bounded_and_keep_the_newest_audio():
    mix = ListenerMix()
    bound = int(MIX_RATE * MAX_BUFFER_SECONDS)
    for second in range(5):  # five seconds nobody pulls
        mix.push("agent", np.full(MIX_RATE, second + 1, dtype=np.int16))
    assert mix.queued()["agent"] == bound
    assert mix.dropped()["agent"] == 5 * MIX_RATE - bound
    assert set(mix.pull().tolist()) == {5}, "the oldest audio went first"


def test_a_side_resumes_only_after_priming():
    mix = ListenerMix()
    mix.push("agent", np.ones(FRAME_SAMPLES, dtype=np.int16))
    assert not mix.pull().any(), "one frame is not enough to start"
    mix.push("agent", np.ones(FRAME_SAMPLES, dtype=np.int16))
    assert mix.pull().all() and mix.pull().all()
    assert not mix.pull().any()


def test_tap_feeds_the_speaker_side_and_does_no_work_for_nobody():
    tap = LiveTap((1, "1.1"))
    chunks = frames_of(tone(1000, 16_000, 0.2), 16_000)
    tap.relayed("agent", chunks[0])  # the relay towards the agent carries the user's voice
    assert tap._resamplers == {}, "nobody listening: no work"
    listener = tap.add_listener()
    for chunk in chunks[1:]:
        tap.relayed("agent", chunk)
    queued = listener.queued()
    assert queued["agent"] == 0 and queued["user"] > 0.15 * MIX_RATE


def test_a_listener_that_never_pulls_does_not_hold_up_the_relay():
    tap = LiveTap((1, "1.1"))
    stalled = [tap.add_listener() for _ in range(3)]
    chunk = AudioChunk(tone(440, 16_000, 0.016), 16_000)
    for _ in range(1000):  # 16 s of audio, offered synchronously: nothing to wait on
        assert tap.relayed("user", chunk) is None
    for listener in stalled:
        assert listener.queued()["agent"] == int(MIX_RATE * MAX_BUFFER_SECONDS)


def test_tap_survives_audio_it_cannot_resample():
    tap = LiveTap((1, "1.1"))
    tap.add_listener()
    tap.relayed("user", AudioChunk(b"\x01\x02" * 100, -5))
    assert tap.feed_errors == 1


def test_listeners_are_limited_and_refused_after_the_call():
    tap = LiveTap((1, "1.1"), max_listeners=2)
    first, second = tap.add_listener(), tap.add_listener()
    assert first and second and tap.add_listener() is None
    tap.remove_listener(first)
    assert first.closed and tap.add_listener() is not None
    tap.close()
    assert second.closed and tap.add_listener() is None and tap.listener_count == 0


def test_open_tap_registers_voice_sessions_only_while_they_run():
    key = (7, "3.2__trial2")
    with open_tap(key, "voice") as tap:
        assert registry.find(key) is tap
        listener = tap.add_listener()
    assert registry.find(key) is None and listener.closed
    with open_tap(key, "text") as tap:
        assert tap is None and registry.find(key) is None
    with open_tap(None, "voice") as tap:
        assert tap is None
    with pytest.raises(RuntimeError), open_tap(key, "voice"):
        raise RuntimeError("session failed")
    assert registry.find(key) is None


async def test_track_paces_48k_opus_packets_and_ends_with_the_call():
    import av

    mix = ListenerMix()
    track = LiveMixTrack(mix)
    ended = asyncio.Event()
    track.on("ended", ended.set)
    mix.push("agent", np.frombuffer(tone(440, MIX_RATE, 0.2), dtype="<i2"))
    started = time.monotonic()
    packets = [await track.recv() for _ in range(10)]
    elapsed = time.monotonic() - started
    assert [p.pts for p in packets] == [i * FRAME_SAMPLES for i in range(10)]
    assert all(p.duration == FRAME_SAMPLES and p.time_base.denominator == MIX_RATE for p in packets)
    assert elapsed >= 0.15, "paced in real time: 10 packets take at least ~0.18 s"
    decoder = av.CodecContext.create("libopus", "r")
    decoded = [f.to_ndarray() for p in packets for f in decoder.decode(p)]
    assert np.abs(decoded[3]).max() > 4000
    mix.close()
    with pytest.raises(MediaStreamError):
        await track.recv()
    assert ended.is_set() and track.readyState == "ended"
