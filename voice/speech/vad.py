"""Silero VAD from the onnx model shipped inside the pipecat wheel (no download)."""
from __future__ import annotations

STOP_SECS = 0.4
"""Silence before Silero reports a stop; with the collector's turn gap it sets the handoff floor
(bench/speech_latency.py prints both)."""
# The bridge streams audio continuously (silence included), so a gap in arriving frames means a
# starved event loop, not a muted caller; pipecat's 1 s default then cuts turns in two on a busy
# machine. A long timeout keeps the safety net for a stream that really stops.
AUDIO_IDLE_TIMEOUT_SECS = 5.0


SILENCE_SETTLE_WINDOWS = 16
"""Model windows of digital silence (all-zero samples: what the bridge streams while nobody
speaks) that Silero still scores before it is skipped, about 0.5 s."""
WARM_UP_WINDOWS = 16
"""Windows of silence a freshly reset Silero scores before the first speech after a skipped
silence. Why: from a fresh state the model under-scores the opening of speech, and not only
for a window or two. On a phone line's audio it scored "No, that's all. Thanks, goodbye."
0.3-0.6 where a warmed state scores 0.9, so the VAD never reported the caller speaking and the
turn was lost (the call ended by inactivity). pipecat's own periodic reset is followed by the
silence that caused it; 8-32 windows of it give the same scores as never skipping."""


SILENT_VOLUME_WINDOWS = 13
"""All-zero model windows (32 ms) that fill pipecat's 0.4 s loudness block: after that many the
block is digital silence, whose BS.1770 loudness is the floor, i.e. volume 0, so it is not measured."""


def _all_zero(buffer: bytes | bytearray) -> bool:
    return buffer.count(0) == len(buffer)


def make_vad_analyzer(sample_rate: int = 16000, *, stop_secs: float = STOP_SECS):
    from pipecat.audio.utils import exp_smoothing
    from pipecat.audio.vad.silero import SileroVADAnalyzer
    from pipecat.audio.vad.vad_analyzer import VADParams, VADState

    class BufferingSileroVAD(SileroVADAnalyzer):
        """Silero scored on the event loop, once per complete model window, and not at all for a
        window of digital silence once the silence has settled.

        Why: pipecat hands every frame to a worker thread, though Silero's window is 32 ms and
        scoring one takes about 0.2 ms; the hand-offs (a future, a lock, a wake-up of the loop)
        cost more CPU than the model (bench/call_profile.py). The states are exactly pipecat's:
        the same code runs, on the loop's thread. More than half of a call's windows are the
        bridge's digital silence, where the model can only say 0: after
        ``SILENCE_SETTLE_WINDOWS`` of them those windows are scored 0 without the model, and
        the first sound after them meets the model in the state a silence leaves it in
        (``_warm_up``), never a fresh one. Nor is the loudness of a block of digital silence
        measured (``SILENT_VOLUME_WINDOWS``). Relies on pipecat 1.14's ``_run_analyzer`` /
        ``_volume_tracker`` / ``_prev_volume`` / ``_model`` (pinned)."""

        def __init__(self, **kwargs) -> None:
            super().__init__(**kwargs)
            self._zero_windows = 0

        async def analyze_audio(self, buffer: bytes) -> VADState:
            return self._run_analyzer(buffer)  # buffers until a window is complete, then scores it

        def _get_smoothed_volume(self, audio: bytes) -> float:
            self._volume_tracker.update(audio, self.sample_rate)
            volume = 0.0 if self._zero_windows >= SILENT_VOLUME_WINDOWS else self._volume_tracker.volume
            return exp_smoothing(volume, self._prev_volume, self._smoothing_factor)

        def voice_confidence(self, buffer) -> float:
            if not _all_zero(buffer):
                if self._zero_windows >= SILENCE_SETTLE_WINDOWS:
                    self._warm_up(len(buffer))
                self._zero_windows = 0
                return super().voice_confidence(buffer)
            self._zero_windows += 1
            if self._zero_windows < SILENCE_SETTLE_WINDOWS:
                return super().voice_confidence(buffer)
            return 0.0

        def _warm_up(self, window_bytes: int) -> None:
            """Reset the model, then score ``WARM_UP_WINDOWS`` of silence: the state the silence
            it skipped would have left (pipecat resets the model during long silences too)."""
            self._model.reset_states()
            self._windows_since_reset = 0
            silence = bytes(window_bytes)
            for _ in range(WARM_UP_WINDOWS):
                super().voice_confidence(silence)

    return BufferingSileroVAD(sample_rate=sample_rate, params=VADParams(stop_secs=stop_secs))


def make_vad_processor(sample_rate: int = 16000):
    """The pipeline stage that turns inbound audio into VAD user-speaking frames."""
    from pipecat.processors.audio.vad_processor import VADProcessor

    return VADProcessor(vad_analyzer=make_vad_analyzer(sample_rate), audio_idle_timeout=AUDIO_IDLE_TIMEOUT_SECS)
