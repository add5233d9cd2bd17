"""Listen on a Celery run (issue 15): the call runs in a real ``celery worker`` process, started
by a real ``run_eval --executor celery``, and is heard from this process over the Redis channel
layer through the same listen service the site's Listen button uses.

The two sides are protocol doubles served over WebSocket from this process (``--agent-url``,
``--user-url``: the external-bot path), the agent playing a 440 Hz tone and the passenger 1000 Hz,
so what the listener hears is known exactly."""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest

from scoring.core.canonical import db_hash
from tests.scoring.celery_helpers import kill_group, run_id_of
from tests.services import CeleryStack
from tests.voice.listen_helpers import Listener, band_power
from voice.listen import remote
from voice.protocol.websocket import serve_websocket
from voice.testing.double import DoubleOptions, ScriptedTurn, double_host

pytestmark = pytest.mark.slow

SCENARIO = "eva_airline__1_1_3"
TURNS = tuple(ScriptedTurn(f"turn {index}") for index in range(80))
T = TypeVar("T")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CeleryStack]:
    stack = CeleryStack(tmp_path_factory.mktemp("listen"))
    try:
        yield stack.start()
    finally:
        stack.stop()


async def poll(read: Callable[[], T | None], timeout: float, what: str, *, every: float = 0.2) -> T:
    """``read()`` (run off the event loop, which serves the bots) until it gives a value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = await asyncio.to_thread(read)
        if value:
            return value
        await asyncio.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


async def join_when_live(listener: Listener, key: tuple[int, str], timeout: float) -> None:
    """Join as the page does: ask again until the worker's call answers (its bots set up)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            await listener.join(key)
            return
        except AssertionError:  # "not live yet": nobody answered the join
            if time.monotonic() > deadline:
                raise AssertionError(f"the call {key} on the worker never answered a join") from None
            await asyncio.sleep(0.2)


async def test_a_call_on_a_celery_worker_is_heard_through_the_listen_service(stack: CeleryStack, settings) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                           "CONFIG": {"hosts": [{"address": stack.redis.url, "socket_timeout": 15}]}}}
    assert remote.relay_layer() is not None
    agent = await serve_websocket(double_host(DoubleOptions(role="agent", modality="voice", script=TURNS,
                                                            tone_hz=440.0, chunks_per_turn=5), db_hasher=db_hash),
                                  "127.0.0.1", 0)
    user = await serve_websocket(double_host(DoubleOptions(role="user", modality="voice", script=TURNS,
                                                           tone_hz=1000.0, chunks_per_turn=5), db_hasher=db_hash),
                                 "127.0.0.1", 0)
    workers = stack.workers().start(1)
    listener = Listener()
    coordinator = None
    try:
        await asyncio.to_thread(workers.wait_ready)
        before = set(stack.session_dirs())
        coordinator = stack.run_eval("--scenarios", SCENARIO, "--modality", "voice", "--agent-url", agent.url,
                                     "--user-url", user.url, "--duration", "20", "--inactivity-timeout", "0",
                                     "--executor", "celery", log_name="listen.log")
        session = await poll(lambda: next(iter(set(stack.session_dirs()) - before), None), 60, "the session")
        run_id = await poll(lambda: run_id_of(stack, session), 60, "the run row", every=0.5)
        await join_when_live(listener, (run_id, SCENARIO), 90)
        await asyncio.wait_for(listener.ended.wait(), 90)  # the call ended on the worker, and the feed said so
        assert await asyncio.to_thread(coordinator.wait, 120) == 0, (stack.root / "listen.log").read_text()[-3000:]
        assert (session / SCENARIO / "metrics.json").exists()
        assert "received" in workers.log(0)
    finally:
        if coordinator is not None and coordinator.poll() is None:
            kill_group(coordinator)
        if getattr(listener, "pc", None) is not None:
            await listener.pc.close()
        await asyncio.to_thread(workers.stop)
        await agent.close()
        await user.close()
    audio = listener.audio()
    assert listener.rate == 48_000 and audio.size > 48_000, "seconds of the call arrived"
    assert band_power(audio, 48_000, 440) > 0.05, "the agent is heard"
    assert band_power(audio, 48_000, 1000) > 0.05, "the passenger is heard"
