"""Voice modality: VAD events and ASR results -> user events and one context turn."""
from __future__ import annotations

import asyncio
import time
from typing import Optional

from pipecat.frames.frames import (
    CancelFrame,
    EndFrame,
    Frame,
    InputAudioRawFrame,
    LLMMessagesAppendFrame,
    TranscriptionFrame,
    TTSSpeakFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from loguru import logger

from voice.bots.processors.barge_in import CutInPlan
from voice.bots.processors.sink import EmitSink
from voice.protocol import rtvi


UNINTELLIGIBLE = "[unintelligible]"
TURN_GAP_SECS = 0.45
"""Quiet audio after the VAD's own stop (voice.speech.vad.STOP_SECS) that ends a heard turn: the
two together (~0.85 s) bridge the pauses of a spelled code and a sentence break (a pause up to
about 0.65 s, the VAD needing 0.2 s of speech to report a restart); the ASR decodes during the
gap, so the handoff floor is the VAD stop plus the longer of the gap and the decode."""


class TranscriptTurnCollector(FrameProcessor):
    """Reports what the bot heard and hands finished turns to the LLM.

    Why: the VAD splits one spoken turn at every pause (a spelled code has many), while the
    built-in models advance by turn count; so transcripts are joined until the other side has
    been quiet for ``turn_gap_secs`` and only then appended to the context as one user message.
    Each ASR result is still reported at once as a final ``user-transcription``. Speech that the
    ASR could not make out still ends a turn, as ``UNINTELLIGIBLE``: a caller who said something
    gets an answer (a request to repeat, say) instead of silence until the inactivity timeout.

    The quiet time is counted in *audio* (the bridge streams silence continuously), not on the
    wall clock: on a loaded event loop audio frames queue up, and a wall-clock timer then fired
    while the rest of the caller's utterance was still waiting in the queue, which split turns
    and made the agent answer mid-utterance. The wall clock is only the fallback for a stream that
    has really stopped (no audio frame for ``STALE_AUDIO_SECS``) or never carried audio.

    With a ``cut_in`` plan (the passenger under ``barge-in``) it also counts the other side's
    speech in the current turn and, when the plan says so, speaks over it: the cut turn is dropped
    (what was heard of it is still reported, but never answered) and the next is awaited.
    """

    STALE_AUDIO_SECS = 2.0

    def __init__(self, sink: EmitSink, *, turn_gap_secs: float = TURN_GAP_SECS,
                 cut_in: Optional[CutInPlan] = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self._sink = sink
        self._gap = turn_gap_secs
        self._cut_in = cut_in
        self._turn_speech = 0.0
        """Seconds of the other side's speech in the current turn (for ``cut_in``)."""
        self._turn_cut = False
        self._ignored_segments = 0
        """Segments of a cut turn still being decoded: reported when they come, never answered."""
        self._parts: list[str] = []
        self._speaking = False
        self._heard_speech = False
        self._pending_segments = 0
        self._quiet_audio = 0.0
        """Seconds of audio received since the VAD last reported the caller stopped."""
        self._last_audio: Optional[float] = None
        self._timer: Optional[asyncio.Task] = None

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, InputAudioRawFrame):
            self._last_audio = time.monotonic()
            seconds = len(frame.audio) / (2 * frame.sample_rate * max(1, frame.num_channels))
            if self._speaking:
                self._turn_speech += seconds
                if self._cut_in is not None and not self._turn_cut and self._cut_in.due(self._turn_speech):
                    await self._speak_over()
            elif self._parts or self._heard_speech:
                self._quiet_audio += seconds
                if self._pending_segments == 0 and self._quiet_audio >= self._gap:
                    await self._cancel_timer()
                    await self._finish_turn()
            # The caller's audio ends here: nothing after the turn collector reads it, and
            # pushing 62 frames a second through the LLM, TTS and aggregators cost a tenth of
            # a call's CPU (bench/call_profile.py).
            return
        elif isinstance(frame, VADUserStartedSpeakingFrame):
            self._speaking = True
            self._heard_speech = True
            self._quiet_audio = 0.0
            await self._cancel_timer()
            self._sink.send(rtvi.user_started_speaking())
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            self._speaking = False
            self._pending_segments += 1
            self._quiet_audio = 0.0
            self._sink.send(rtvi.user_stopped_speaking())
            if self._turn_cut:
                # A turn we spoke over ends when its speaker stops (it yielded): its segments
                # are dropped as they decode, and whatever it says next is a turn of its own.
                await self._cancel_timer()
                self._end_cut_turn()
            else:
                # The segment's transcript is still being decoded; this is only the fallback for
                # a segment whose transcription never arrives.
                await self._arm_timer(self._gap + self._decode_allowance, give_up_decoding=True)
        elif isinstance(frame, TranscriptionFrame):
            # One transcription per decoded segment (an empty one when nothing was recognised);
            # the turn may only end once every segment of it has been decoded.
            text = frame.text.strip()
            if text:
                self._sink.send(rtvi.user_transcription(text, final=True))
            if self._ignored_segments:
                self._ignored_segments -= 1
                return
            self._pending_segments = max(0, self._pending_segments - 1)
            if text and not self._turn_cut:
                self._parts.append(text)
            if not self._speaking and self._pending_segments == 0 and self._parts:
                if self._quiet_audio >= self._gap and self._audio_flowing():
                    await self._cancel_timer()
                    await self._finish_turn()
                else:
                    await self._arm_timer(self._gap)
            return  # the context gets the joined turn instead
        elif isinstance(frame, (EndFrame, CancelFrame)):
            await self._cancel_timer()
        await self.push_frame(frame, direction)

    _decode_allowance = 3.0

    def _audio_flowing(self) -> bool:
        return self._last_audio is not None and time.monotonic() - self._last_audio < self.STALE_AUDIO_SECS

    async def _arm_timer(self, delay: float, *, give_up_decoding: bool = False) -> None:
        await self._cancel_timer()
        self._timer = self.create_task(self._finish_turn_later(delay, give_up_decoding))

    async def _cancel_timer(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None and not timer.done() and timer is not asyncio.current_task():
            await self.cancel_task(timer)

    async def _finish_turn_later(self, delay: float, give_up_decoding: bool) -> None:
        await asyncio.sleep(delay)
        if give_up_decoding:
            self._pending_segments = 0
        while self._audio_flowing():
            # Audio still arrives: the audio clock decides (this only waits for the stream to stop).
            await asyncio.sleep(self.STALE_AUDIO_SECS / 4)
            if self._pending_segments == 0 and self._quiet_audio >= self._gap:
                break
        if self._pending_segments == 0:
            await self._finish_turn()

    async def _speak_over(self) -> None:
        """Cut into the other side's turn: say the plan's words now; the turn will be dropped."""
        assert self._cut_in is not None
        self._turn_cut = True
        self._parts = []
        words = self._cut_in.cut(self._turn_speech)
        logger.debug(f"cutting in after {self._turn_speech:.1f} s of the other side's turn: {words!r}")
        # Not added to this side's context: a reflex, not an answer to anything it heard.
        await self.push_frame(TTSSpeakFrame(words, append_to_context=False))

    def _end_cut_turn(self) -> None:
        assert self._cut_in is not None
        self._ignored_segments += self._pending_segments
        self._pending_segments = 0
        self._parts = []
        self._heard_speech = False
        self._turn_speech = 0.0
        self._turn_cut = False
        self._cut_in.turn_ended(was_cut=True)

    async def _finish_turn(self) -> None:
        if self._speaking or not (self._parts or self._heard_speech):
            return
        text = " ".join(self._parts) or UNINTELLIGIBLE
        self._parts = []
        self._heard_speech = False
        self._quiet_audio = 0.0
        self._turn_speech = 0.0
        if self._cut_in is not None:
            self._cut_in.turn_ended(was_cut=False)
        await self.push_frame(
            LLMMessagesAppendFrame(messages=[{"role": "user", "content": text}], run_llm=True)
        )
