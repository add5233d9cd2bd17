"""Voice modality: TTS frames -> speaking events, TTS text and 100 ms PCM chunks."""
from __future__ import annotations

from pipecat.frames.frames import (
    Frame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    TTSTextFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from voice.bots.processors.events import rtvi_event
from voice.bots.processors.sink import EmitSink
from voice.protocol.channel import AudioChunk


class SpeechOutputEmitter(FrameProcessor):
    """Plays the part of an output transport for the bridge connection.

    Why: the harness expects bot-started-speaking / bot-tts-text / audio / bot-stopped-speaking
    per utterance and 24 kHz s16le chunks of a fixed size (harness.md §6.1); pipecat's TTS
    emits audio in arbitrary sizes, so it is re-chunked here. One TTSStarted..TTSStopped span
    is one utterance.
    """

    def __init__(self, sink: EmitSink, *, sample_rate: int = 24000, chunk_secs: float = 0.1, **kwargs) -> None:
        super().__init__(**kwargs)
        self._sink = sink
        self._rate = sample_rate
        self._chunk_bytes = max(2, int(sample_rate * chunk_secs) * 2)
        self._buffer = bytearray()
        self._speaking = False

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction == FrameDirection.DOWNSTREAM:
            if isinstance(frame, TTSStartedFrame):
                self._start()
            elif isinstance(frame, TTSAudioRawFrame):
                self._start()
                await self._add_audio(frame)
                return  # audio leaves through the sink only
            elif isinstance(frame, TTSTextFrame):
                self._start()
                if frame.text.strip():
                    self._sink.send(rtvi_event("bot-tts-text", {"text": frame.text}))
            elif isinstance(frame, TTSStoppedFrame):
                self._stop()
        await self.push_frame(frame, direction)

    def _start(self) -> None:
        if not self._speaking:
            self._speaking = True
            self._sink.send(rtvi_event("bot-started-speaking"))
            self._sink.send(rtvi_event("bot-tts-started"))

    def _stop(self) -> None:
        if not self._speaking:
            return
        if self._buffer:
            self._sink.send(AudioChunk(bytes(self._buffer), self._rate, 1))
            self._buffer.clear()
        self._speaking = False
        self._sink.send(rtvi_event("bot-tts-stopped"))
        self._sink.send(rtvi_event("bot-stopped-speaking"))

    async def _add_audio(self, frame: TTSAudioRawFrame) -> None:
        pcm = frame.audio
        if frame.num_channels != 1 or frame.sample_rate != self._rate:
            pcm = _to_mono_rate(pcm, frame.sample_rate, frame.num_channels, self._rate)
        self._buffer += pcm
        while len(self._buffer) >= self._chunk_bytes:
            self._sink.send(AudioChunk(bytes(self._buffer[: self._chunk_bytes]), self._rate, 1))
            del self._buffer[: self._chunk_bytes]


def _to_mono_rate(pcm: bytes, rate: int, channels: int, target: int) -> bytes:
    """Down-mix and resample a TTS chunk that does not match the harness output format."""
    import numpy as np
    import soxr

    samples = np.frombuffer(pcm, dtype=np.int16)
    if channels > 1:
        samples = samples.reshape(-1, channels).mean(axis=1).astype(np.int16)
    if rate != target:
        samples = soxr.resample(samples, rate, target)
    return np.asarray(samples, dtype=np.int16).tobytes()
