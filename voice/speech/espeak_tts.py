"""espeak-ng as a pipecat TTS service: the zero-dependency fallback voice (robotic, instant)."""
from __future__ import annotations

import asyncio
import contextlib
import shutil
from typing import AsyncGenerator, AsyncIterator

from pipecat.frames.frames import ErrorFrame, Frame
from pipecat.services.settings import TTSSettings
from pipecat.services.tts_service import TTSService

from voice.speech.synthesis_wait import keeps_context_open, with_synthesis_wait

ESPEAK_RATE = 22050
DEFAULT_WPM = 165
"""espeak-ng's own default speed (``-s``); the ``rate`` condition scales it."""


class EspeakTTSService(TTSService):
    """Runs ``espeak-ng --stdout`` per sentence and streams its WAV output as audio frames."""

    def __init__(self, *, voice: str = "en-us", rate_wpm: int = DEFAULT_WPM, binary: str | None = None, **kwargs) -> None:
        super().__init__(
            push_start_frame=True,
            push_stop_frames=True,
            settings=TTSSettings(model=None, voice=voice, language=None),
            **with_synthesis_wait(kwargs),
        )
        self._binary = binary or shutil.which("espeak-ng") or "espeak-ng"
        self._voice = voice
        self._rate_wpm = rate_wpm

    def can_generate_metrics(self) -> bool:
        return True

    @keeps_context_open
    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame, None]:
        try:
            proc = await asyncio.create_subprocess_exec(
                self._binary, "-v", self._voice, "-s", str(self._rate_wpm), "--stdout", text,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
            )
        except OSError as exc:
            yield ErrorFrame(error=f"espeak-ng unavailable: {exc}")
            return

        async def wav_bytes() -> AsyncIterator[bytes]:
            assert proc.stdout is not None
            while chunk := await proc.stdout.read(8192):
                yield chunk

        try:
            await self.start_tts_usage_metrics(text)
            async for frame in self._stream_audio_frames_from_iterator(
                wav_bytes(), in_sample_rate=ESPEAK_RATE, strip_wav_header=True, context_id=context_id
            ):
                await self.stop_ttfb_metrics()
                yield frame
            await proc.wait()
        finally:
            # An interruption cancels this generator mid-sentence: never leave espeak-ng running.
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()


def make_espeak_tts(*, rate: float = 1.0, **kwargs) -> EspeakTTSService:
    """espeak-ng at ``rate`` times its default 165 words per minute."""
    if rate <= 0:
        raise ValueError(f"speaking rate must be positive, got {rate}")
    return EspeakTTSService(rate_wpm=round(DEFAULT_WPM * rate), **kwargs)
