"""Keeping a local synthesizer's audio context open for as long as it is still synthesizing.

pipecat ends an audio context whose next item does not come within ``stop_frame_timeout_s``
(3 s by default, a streaming HTTP voice's pace): it calls the context finished ("completed with no
audio"), says the bot stopped speaking in the middle of its turn, and reopens it when the audio
comes. Piper, hibari and espeak-ng compute on this machine's CPUs, and on a busy one (a call
beside others, or a test process under ``nice``) one sentence can take longer than any fixed wait.
So while their ``run_tts`` works, the context is kept alive, however long the sentence takes; the
longer wait still covers the gap between two sentences of a turn, when nothing is synthesizing. A
context that ends normally ends at once, so neither costs anything on a quiet machine.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncGenerator, Callable
from typing import Any

LOCAL_SYNTHESIS_WAIT_S = 10.0
KEEPALIVES_PER_WAIT = 4
"""How many keepalives a synthesizing context gets per ``stop_frame_timeout_s``."""

RunTTS = Callable[[Any, str, str], AsyncGenerator[Any, None]]


def with_synthesis_wait(kwargs: dict) -> dict:
    """``kwargs`` for a local ``TTSService``, with the longer wait unless the caller set one."""
    return {"stop_frame_timeout_s": LOCAL_SYNTHESIS_WAIT_S, **kwargs}


def keeps_context_open(run_tts: RunTTS) -> RunTTS:
    """``run_tts`` of a local TTSService, keeping its audio context alive while it runs."""

    @functools.wraps(run_tts)
    async def run(service: Any, text: str, context_id: str) -> AsyncGenerator[Any, None]:
        keeper = asyncio.create_task(_keep_open(service, context_id))
        try:
            async with contextlib.aclosing(run_tts(service, text, context_id)) as frames:
                async for frame in frames:
                    yield frame
        finally:
            keeper.cancel()

    return run


async def _keep_open(service: Any, context_id: str) -> None:
    """Restart pipecat's wait on the context until it is gone (ended, or interrupted). Relies on
    pipecat 1.14's own keepalive, ``_refresh_audio_context``, and ``_stop_frame_timeout_s`` (pinned)."""
    every_s = service._stop_frame_timeout_s / KEEPALIVES_PER_WAIT
    while service.audio_context_available(context_id):
        service._refresh_audio_context(context_id)
        await asyncio.sleep(every_s)
