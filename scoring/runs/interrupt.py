"""Ctrl-C for a run in the foreground: the run stops, however deep the signal lands.

Why not ``asyncio.run``'s own handling: it cancels the main task once, and a cancellation that a
library swallows on the way (a pipeline's teardown, a shielded close) is simply gone, so the run
went on to its end and exited 0 as if nobody had asked (seen under load in the Ctrl-C test). Here
the request stays standing: the task is cancelled again every half second until it ends.
"""
from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

RECANCEL_SECS = 0.5


async def until_interrupted(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` as a task; on SIGINT cancel it, again and again until it ends, then raise
    ``KeyboardInterrupt`` (a run that still finished normally returns its result)."""
    task = asyncio.ensure_future(coro)
    loop = asyncio.get_running_loop()
    asked = False

    def on_sigint() -> None:
        nonlocal asked
        asked = True
        task.cancel()

    loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=RECANCEL_SECS)
            if asked and not task.done():
                task.cancel()
    finally:
        loop.remove_signal_handler(signal.SIGINT)
    try:
        return task.result()
    except asyncio.CancelledError:
        if asked:
            raise KeyboardInterrupt from None
        raise
