"""hibari's bundled "heart" voice as a pipecat TTS service: a second voice for the passenger.

hibari-tts (Apache-2.0, on PyPI) is a small Kokoro-82M distillation on onnxruntime; its wheel
carries one voice, "heart" (American English, female). Its other voices download on first use,
so only "heart" is offered and the path is asked for with ``download_missing=False``: a run can
never reach the network. Audio is 24 kHz; synthesis runs in a worker thread, one sentence at a
time, with a fixed noise seed, so the same text always gives the same samples.
"""
from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any, AsyncGenerator, AsyncIterator

import numpy as np
from pipecat.frames.frames import ErrorFrame, Frame, StartFrame
from pipecat.services.settings import TTSSettings
from pipecat.services.tts_service import TTSService

from voice.speech.synthesis_wait import keeps_context_open, with_synthesis_wait

HIBARI_VOICE = "heart"
HIBARI_RATE = 24000
SEED = 0


@functools.lru_cache(maxsize=1)
def _loaded() -> Any:
    from hibari import Hibari
    from hibari.voices import voice_path

    return Hibari(voice=HIBARI_VOICE, model=voice_path(HIBARI_VOICE, download_missing=False), threads=1)


_lock = threading.Lock()
"""hibari's G2P keeps caches of its own: one synthesis at a time per process."""


def _pcm(chunk: np.ndarray) -> bytes:
    return (np.clip(chunk, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


def _next_sentence(sentences: Any) -> bytes | None:
    with _lock:
        chunk = next(sentences, None)
    return None if chunk is None else _pcm(chunk)


def synthesize(text: str, rate: float = 1.0) -> bytes:
    """The whole of ``text`` as s16le 24 kHz PCM (blocking; for tests and benches)."""
    sentences = _loaded().stream(text, speed=rate, seed=SEED)
    out = []
    while (chunk := _next_sentence(sentences)) is not None:
        out.append(chunk)
    return b"".join(out)


class HibariTTSService(TTSService):
    """Speaks with hibari's "heart" at ``rate`` times its own pace (0.5-2.0)."""

    def __init__(self, *, rate: float = 1.0, **kwargs) -> None:
        if not 0.5 <= rate <= 2.0:
            raise ValueError(f"hibari speaks at 0.5-2.0 times its pace, not {rate}")
        super().__init__(push_start_frame=True, push_stop_frames=True,
                         settings=TTSSettings(model=None, voice=HIBARI_VOICE, language=None),
                         **with_synthesis_wait(kwargs))
        self._rate = rate

    def can_generate_metrics(self) -> bool:
        return True

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        await asyncio.to_thread(_loaded)  # ~0.7 s once per process, off the event loop

    @keeps_context_open
    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame, None]:
        async def pcm() -> AsyncIterator[bytes]:
            # One sentence per worker-thread step: the first is heard before the last is made.
            sentences = _loaded().stream(text, speed=self._rate, seed=SEED)
            while (chunk := await asyncio.to_thread(_next_sentence, sentences)) is not None:
                yield chunk

        try:
            await self.start_tts_usage_metrics(text)
            async for frame in self._stream_audio_frames_from_iterator(pcm(), in_sample_rate=HIBARI_RATE,
                                                                        context_id=context_id):
                await self.stop_ttfb_metrics()
                yield frame
        except Exception as exc:  # a broken install must show as an error frame, not a dead pipeline
            yield ErrorFrame(error=f"hibari TTS failed: {exc}")


def make_hibari_tts(*, rate: float = 1.0, **kwargs) -> HibariTTSService:
    return HibariTTSService(rate=rate, **kwargs)
