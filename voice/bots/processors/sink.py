"""The swappable, ordered outlet from a running pipeline to the current connection."""
from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Optional

from loguru import logger

from voice.bots.brain import Emit
from voice.protocol.channel import AudioChunk, Item


class EmitSink:
    """Queues items and delivers them in order through the connection's ``emit``.

    Why a queue: processors must never block on the network, and events from the pipeline,
    tool handlers and post-delivery hooks must keep one order. With ``pace_audio`` each audio
    chunk is followed by a wait of its duration (absolute clock), so speaking events line up
    with the audio as a real-time transport would produce them.
    """

    def __init__(self, *, pace_audio: bool = False) -> None:
        self._emit: Optional[Emit] = None
        self._pace_audio = pace_audio
        self._queue: asyncio.Queue[Item] = asyncio.Queue()
        self._task: Optional[asyncio.Task] = None
        self._clock: float | None = None
        self._busy = False

    @property
    def attached(self) -> bool:
        return self._emit is not None

    def attach(self, emit: Emit) -> None:
        self._emit = emit
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def detach(self) -> None:
        """Stop delivering; whatever is still queued is dropped with the connection."""
        self._emit = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        while not self._queue.empty():
            self._queue.get_nowait()
        self._clock = None

    def send(self, item: Item) -> None:
        """Queue one item (dropped when no connection is attached)."""
        if self._emit is not None:
            self._queue.put_nowait(item)

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait until everything queued so far has been delivered (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        while (not self._queue.empty() or self._busy) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    async def _run(self) -> None:
        while True:
            item = await self._queue.get()
            self._busy = True
            try:
                emit = self._emit
                if emit is None:
                    continue
                try:
                    await emit(item)
                except Exception as exc:  # the connection went away: keep the pipeline alive
                    logger.debug(f"emit failed: {exc!r}")
                if self._pace_audio and isinstance(item, AudioChunk):
                    await self._pace(item)
                elif self._queue.empty():
                    self._clock = None
            finally:
                self._busy = False

    async def _pace(self, chunk: AudioChunk) -> None:
        duration = len(chunk.pcm) / (2 * chunk.num_channels * chunk.sample_rate)
        now = time.monotonic()
        if self._clock is None or self._clock < now - 0.05:
            self._clock = now
        self._clock += duration
        await asyncio.sleep(max(0.0, self._clock - time.monotonic()))
