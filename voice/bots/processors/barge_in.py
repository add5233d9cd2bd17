"""Barge-in: the built-in agent stops talking when the caller starts; the passenger cuts in.

Why three pieces on the agent's side: pipecat's interruption (an ``InterruptionFrame`` broadcast
through the pipeline) stops the LLM and the TTS, but the TTS renders far faster than real time, so
most of an utterance is already waiting in the ``EmitSink``'s paced queue when the caller cuts in.
To yield, the agent must also drop that queued audio and say it stopped speaking:

- ``InterruptibleSink``: an ``EmitSink`` that can drop its queued audio chunks (events stay, in
  order) and tells whether audio is still playing;
- ``YieldToCaller``: after the VAD, broadcasts an interruption when the caller starts speaking
  while the agent is mid-utterance (``InterruptibleSpeechOutput.speaking``);
- ``InterruptibleSpeechOutput``: the speech emitter that, on an interruption, drops what is
  buffered and queued and ends the utterance (bot-tts-stopped, bot-stopped-speaking).

``PipecatBrain`` wires all three into every voice agent. The passenger's side (``CutInPlan``) is
the ``barge-in`` condition: ``TranscriptTurnCollector`` counts the agent's speech in a turn and
asks the plan when to cut in.
"""
from __future__ import annotations

import asyncio
import time

from typing import Callable

from pipecat.frames.frames import Frame, InterruptionFrame, VADUserStartedSpeakingFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from voice.bots.processors.sink import EmitSink
from voice.bots.processors.speech_output import SpeechOutputEmitter
from voice.conditions.speaker import BargeInSettings
from voice.protocol.channel import AudioChunk


class InterruptibleSink(EmitSink):
    """An ``EmitSink`` whose queued audio can be dropped when the bot is interrupted."""

    def __init__(self, *, pace_audio: bool = True) -> None:
        super().__init__(pace_audio=pace_audio)
        self.dropped_audio_s = 0.0
        """Audio thrown away by interruptions (for tests and logs)."""

    def audio_playing(self) -> bool:
        """Whether audio is queued, or the last chunk sent is still being played out."""
        queued = any(isinstance(item, AudioChunk) for item in list(self._queue._queue))  # type: ignore[attr-defined]
        return queued or (self._clock is not None and self._clock > time.monotonic())

    def drop_audio(self) -> None:
        """Remove every queued audio chunk (other items keep their order) and end the pacing,
        so what follows goes out now: the caller hears the agent stop at once."""
        kept = []
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if isinstance(item, AudioChunk):
                self.dropped_audio_s += len(item.pcm) / (2 * item.num_channels * item.sample_rate)
            else:
                kept.append(item)
        for item in kept:
            self._queue.put_nowait(item)
        self._clock = None


class YieldToCaller(FrameProcessor):
    """Interrupts the agent's own output when the caller starts speaking over it.

    ``speaking`` says whether the agent is mid-utterance; it is asked only when the VAD reports
    the caller starting, so a caller who speaks into silence interrupts nothing."""

    def __init__(self, speaking: Callable[[], bool], **kwargs) -> None:
        super().__init__(**kwargs)
        self._speaking = speaking
        self.interruptions = 0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, VADUserStartedSpeakingFrame) and self._speaking():
            self.interruptions += 1
            await self.broadcast_interruption()


class InterruptibleSpeechOutput(SpeechOutputEmitter):
    """``SpeechOutputEmitter`` that ends the utterance at once on an interruption."""

    def __init__(self, sink: InterruptibleSink, **kwargs) -> None:
        super().__init__(sink, **kwargs)
        self._interruptible = sink

    def speaking(self) -> bool:
        """Mid-utterance: the TTS is still rendering it, or its audio is still being played out
        (the TTS can finish, or pause between sentences, long before the caller has heard it)."""
        return self._speaking or self._interruptible.audio_playing()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        if isinstance(frame, InterruptionFrame):
            self._buffer.clear()
            self._interruptible.drop_audio()
            self._stop()  # queues bot-tts-stopped and bot-stopped-speaking, now first in line
            await asyncio.sleep(0)
        await super().process_frame(frame, direction)


CUT_IN = "Sorry, go on."
"""What the passenger says when it cuts in: neither a yes nor a no to what it has not heard, so
the agent's answer to it (a repeated offer, the question again) tests recovery, not luck."""


class CutInPlan:
    """When an impatient passenger cuts into the agent (the ``barge-in`` condition).

    A turn is what the collector joins between the caller's turn ends; ``turn_ended`` is told
    whether the turn just ended was cut, so the next one is heard in full."""

    def __init__(self, settings: BargeInSettings) -> None:
        self.settings = settings
        self.cut_at_s: list[float] = []
        """How far into its turn (seconds of speech) each cut came."""
        self._spare_turn = False

    def due(self, turn_speech_s: float) -> bool:
        """Whether to cut into the current turn, which has carried ``turn_speech_s`` of speech."""
        return (not self._spare_turn and self.cuts < self.settings.max_cuts
                and turn_speech_s >= self.settings.after_s)

    @property
    def cuts(self) -> int:
        return len(self.cut_at_s)

    def cut(self, turn_speech_s: float) -> str:
        """Record a cut ``turn_speech_s`` into the turn; the words to say."""
        self.cut_at_s.append(round(turn_speech_s, 3))
        return CUT_IN

    def turn_ended(self, *, was_cut: bool) -> None:
        self._spare_turn = was_cut
