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

from voice.bots.processors.sink import EmitSink
from voice.audio.pcm import resample
from voice.protocol import rtvi
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
                    self._sink.send(rtvi.bot_tts_text(frame.text))
            elif isinstance(frame, TTSStoppedFrame):
                self._stop()
        await self.push_frame(frame, direction)

    def _start(self) -> None:
        if not self._speaking:
            self._speaking = True
            self._sink.send(rtvi.bot_started_speaking())
            self._sink.send(rtvi.bot_tts_started())

    def _stop(self) -> None:
        if not self._speaking:
            return
        if self._buffer:
            self._sink.send(AudioChunk(bytes(self._buffer), self._rate, 1))
            self._buffer.clear()
        self._speaking = False
        self._sink.send(rtvi.bot_tts_stopped())
        self._sink.send(rtvi.bot_stopped_speaking())

    async def _add_audio(self, frame: TTSAudioRawFrame) -> None:
        # TTS services may not match the harness output format: down-mix and resample.
        self._buffer += resample(frame.audio, frame.sample_rate, self._rate, num_channels=frame.num_channels)
        while len(self._buffer) >= self._chunk_bytes:
            self._sink.send(AudioChunk(bytes(self._buffer[: self._chunk_bytes]), self._rate, 1))
            del self._buffer[: self._chunk_bytes]

