"""Ctrl-C stops a foreground run even when something on the way swallows the first cancellation."""
from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from scoring.runs.interrupt import until_interrupted


async def _swallows_one_cancellation(log: list[str]) -> str:
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        log.append("swallowed")  # as a library's teardown might: the run would go on
    await asyncio.sleep(30)
    return "finished"


async def test_sigint_keeps_cancelling_until_the_run_stops() -> None:
    log: list[str] = []
    loop = asyncio.get_running_loop()
    loop.call_later(0.2, os.kill, os.getpid(), signal.SIGINT)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        await until_interrupted(_swallows_one_cancellation(log))
    assert log == ["swallowed"] and time.monotonic() - started < 10


async def test_without_sigint_the_result_comes_back_and_the_handler_goes() -> None:
    async def quick() -> int:
        await asyncio.sleep(0.01)
        return 7

    assert await until_interrupted(quick()) == 7
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
