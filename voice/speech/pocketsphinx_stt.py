"""pocketsphinx (US-English model bundled in its wheel) as a segmented pipecat STT service."""
from __future__ import annotations

import asyncio
import functools
from concurrent.futures import Future, ThreadPoolExecutor
from typing import AsyncGenerator

from pipecat.frames.frames import CancelFrame, EndFrame, ErrorFrame, Frame, StartFrame, TranscriptionFrame
from pipecat.services.settings import STTSettings
from pipecat.services.stt_service import SegmentedSTTService
from pipecat.utils.time import time_now_iso8601

SPHINX_RATE = 16000


class PocketsphinxSTTService(SegmentedSTTService):
    """Decodes each VAD segment with pocketsphinx off the event loop.

    Why segmented: pocketsphinx is a batch decoder here; the VAD decides what a segment is
    and each decoded segment becomes one final TranscriptionFrame.
    """

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("ttfs_p99_latency", 1.0)
        super().__init__(
            sample_rate=SPHINX_RATE, settings=STTSettings(model="en-us", language=None), **kwargs
        )
        self._decoder = None
        self._decoding: Future | None = None
        """The decode running in a worker thread, if any (it outlives a cancelled run_stt)."""
        self._lock = asyncio.Lock()

    @property
    def wants_wav_segments(self) -> bool:
        return False  # raw 16-bit PCM

    def can_generate_metrics(self) -> bool:
        return True

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        # Loaded before the first segment so the first turn pays no model-load latency.
        async with self._lock:
            if self._decoder is None:
                self._decoder = await asyncio.to_thread(_acquire_decoder)

    async def stop(self, frame: EndFrame) -> None:
        await super().stop(frame)
        self._release()

    async def cancel(self, frame: CancelFrame) -> None:
        await super().cancel(frame)
        self._release()

    def _release(self) -> None:
        decoder, self._decoder = self._decoder, None
        if decoder is None:
            return
        decoding = self._decoding
        if decoding is None:
            _IDLE_DECODERS.append(decoder)
        else:
            # A decoder is not thread-safe: pool it only once its last decode has finished
            # (called at once when it already has).
            decoding.add_done_callback(lambda _: _IDLE_DECODERS.append(decoder))

    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame, None]:
        try:
            async with self._lock:
                if self._decoder is None:
                    self._decoder = await asyncio.to_thread(_acquire_decoder)
                self._decoding = _DECODE_THREADS.submit(decode_pcm, self._decoder, audio)
                text = await asyncio.wrap_future(self._decoding)
        except Exception as exc:
            yield ErrorFrame(error=f"pocketsphinx failed: {exc}")
            return
        # Also for an empty result: downstream learns that this segment has been decoded.
        yield TranscriptionFrame(text=text, user_id=self._user_id, timestamp=time_now_iso8601())


_IDLE_DECODERS: list = []
"""Decoders released by stopped services; reused so reconnects do not reload the model."""
_DECODE_THREADS = ThreadPoolExecutor(thread_name_prefix="pocketsphinx")
"""Decodes run here rather than through ``asyncio.to_thread`` because the pool needs the
thread's own future: an asyncio wrapper reports "done" as soon as it is cancelled."""


def _acquire_decoder():
    try:
        return _IDLE_DECODERS.pop()
    except IndexError:
        return new_decoder()


def new_decoder():
    """A decoder on the bundled en-us acoustic model, language model and dictionary."""
    from pocketsphinx import Decoder

    return Decoder(samprate=SPHINX_RATE, loglevel="FATAL")


def decode_pcm(decoder, pcm: bytes) -> str:
    """Recognise one utterance of 16 kHz s16le mono PCM; '' when nothing was recognised."""
    decoder.start_utt()
    decoder.process_raw(pcm, no_search=False, full_utt=True)
    decoder.end_utt()
    hyp = decoder.hyp()
    return hyp.hypstr.strip() if hyp is not None else ""


@functools.lru_cache(maxsize=1)
def shared_decoder():
    """One decoder for synchronous helpers (tests, diagnostics); not for concurrent use."""
    return new_decoder()
