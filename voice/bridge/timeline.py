"""When each side spoke, measured on the audio the bridge relays (the turn-taking metrics' input).

The relay sends exactly one frame per period, so frame ``k`` of a direction sits at
``k × frame_seconds`` of audio time from the relays' common start; that is the clock here, not
the wall clock of a possibly busy event loop. A frame is speech by the RMS rule of harness.md
§6.5. Speech stretches separated by less than ``min_pause`` (the gaps inside and between words)
are one segment; a longer silence ends it. Frames are classified before any audio condition, so
the timeline is what the speaker said, not what the line did to it.
"""
from __future__ import annotations

import math

from voice.audio.pcm import rms

MIN_PAUSE_SECONDS = 0.2
"""A silence shorter than this stays inside a segment: below eva's 200 ms "early" bound, a gap
is no turn boundary anyone could measure."""

Timeline = dict[str, list[list[float]]]
"""``{"agent": [[start_s, end_s], ...], "user": [...]}``: sorted, non-overlapping per side."""


class SpeechTimeline:
    """Speech segments of one relayed stream, in frame indices until asked for seconds."""

    def __init__(self, *, frame_seconds: float, threshold: float, min_pause: float = MIN_PAUSE_SECONDS) -> None:
        self.frame_seconds = frame_seconds
        self.threshold = threshold
        self.min_pause_frames = max(1, math.ceil(min_pause / frame_seconds - 1e-9))
        self.frames = 0
        self._closed: list[tuple[int, int]] = []
        self._open_start: int | None = None
        self._last_speech = -1

    def add(self, pcm: bytes, *, audible: bool = True) -> bool:
        """Classify the next relayed frame; ``audible=False`` marks filler silence (no RMS needed).
        Returns whether it was speech."""
        index = self.frames
        self.frames += 1
        speech = audible and rms(pcm) >= self.threshold
        if speech:
            if self._open_start is None:
                self._open_start = index
            self._last_speech = index
        elif self._open_start is not None and index - self._last_speech >= self.min_pause_frames:
            self._close()
        return speech

    def _close(self) -> None:
        assert self._open_start is not None
        self._closed.append((self._open_start, self._last_speech + 1))
        self._open_start = None

    def frame_segments(self) -> list[tuple[int, int]]:
        """[first frame, frame after the last) of every segment, the open one included."""
        if self._open_start is None:
            return list(self._closed)
        return [*self._closed, (self._open_start, self._last_speech + 1)]

    def segments(self, offset: float) -> list[list[float]]:
        """``[start_s, end_s]`` per segment, ``offset`` being the audio time of frame 0."""
        step = self.frame_seconds
        return [[round(offset + first * step, 4), round(offset + end * step, 4)] for first, end in self.frame_segments()]
