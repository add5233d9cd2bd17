"""Listening in on a call that runs in another process, over a real redis-server: the call's
process answers the join on the channel layer and streams the mix; this process serves it to an
aiortc 'browser' through the same listen service the endpoint uses."""
from __future__ import annotations

import asyncio
import os
import sys

import pytest

from evasite.env import redis_channel_host
from tests.services import REPO, redis_url  # noqa: F401 - fixture
from tests.voice.listen_helpers import Listener, band_power
from voice.listen import remote, service

pytestmark = pytest.mark.slow(seconds=6)


@pytest.fixture
def redis_layer(settings, redis_url):  # noqa: F811
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                           "CONFIG": {"hosts": [redis_channel_host(redis_url)]}}}
    assert remote.relay_layer() is not None
    return redis_url


async def test_a_call_in_another_process_is_heard_over_redis(redis_layer, tmp_path):
    key = (77, "eva_airline__remote_call")
    env = {**os.environ, "REDIS_URL": redis_layer, "EVASITE_SQLITE_PATH": str(tmp_path / "db.sqlite3")}
    call = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.voice.listen_remote_call", str(key[0]), key[1], "6", cwd=REPO, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    listener = Listener()
    try:
        assert await asyncio.wait_for(call.stdout.readline(), 60) == b"call started\n"
        for _ in range(100):  # the call registers once its bots are set up
            try:
                await listener.join(key)
                break
            except AssertionError:
                await asyncio.sleep(0.1)
        else:
            pytest.fail("the remote call never answered a join")
        await asyncio.wait_for(listener.ended.wait(), 30)  # the call ends, the feed says so
        output = (await asyncio.wait_for(call.stdout.read(), 30)).decode()
        assert await call.wait() == 0, output
        assert "call ended" in output
    finally:
        if call.returncode is None:
            call.kill()
            await call.wait()
        if getattr(listener, "pc", None) is not None:
            await listener.pc.close()
    audio = listener.audio()
    assert listener.rate == 48_000 and audio.size > 48_000, "seconds of the call arrived"
    assert band_power(audio, 48_000, 440) > 0.05 and band_power(audio, 48_000, 1000) > 0.05
    for _ in range(40):
        if service.open_count() == 0:
            break
        await asyncio.sleep(0.05)
    assert service.open_count() == 0


async def test_without_a_live_call_anywhere_the_join_finds_nobody(redis_layer):
    assert await remote.join((78, "nobody")) is None
