"""Silero VAD from the onnx model shipped inside the pipecat wheel (no download)."""
from __future__ import annotations

STOP_SECS = 0.4
"""Silence before Silero reports a stop; with the collector's turn gap it sets the handoff floor
(bench/speech_latency.py prints both)."""
# The bridge streams audio continuously (silence included), so a gap in arriving frames means a
# starved event loop, not a muted caller; pipecat's 1 s default then cuts turns in two on a busy
# machine. A long timeout keeps the safety net for a stream that really stops.
AUDIO_IDLE_TIMEOUT_SECS = 5.0


def make_vad_analyzer(sample_rate: int = 16000, *, stop_secs: float = STOP_SECS):
    from pipecat.audio.vad.silero import SileroVADAnalyzer
    from pipecat.audio.vad.vad_analyzer import VADParams, VADState

    class BufferingSileroVAD(SileroVADAnalyzer):
        """Silero that goes to its thread only when a model window is complete.

        Why: pipecat hands every 16 ms frame to a worker thread, though Silero's window is
        32 ms, so every other hand-off only appends to a buffer; the hand-offs cost more CPU
        than the model (bench/call_profile.py). The append now happens here, on the loop;
        the model still runs off it, so the states are exactly pipecat's. Relies on
        pipecat 1.14's ``_vad_buffer`` / ``_vad_frames_num_bytes`` (pinned)."""

        async def analyze_audio(self, buffer: bytes) -> VADState:
            if len(self._vad_buffer) + len(buffer) < self._vad_frames_num_bytes:
                self._vad_buffer += buffer
                return self._vad_state
            return await super().analyze_audio(buffer)

    return BufferingSileroVAD(sample_rate=sample_rate, params=VADParams(stop_secs=stop_secs))


def make_vad_processor(sample_rate: int = 16000):
    """The pipeline stage that turns inbound audio into VAD user-speaking frames."""
    from pipecat.processors.audio.vad_processor import VADProcessor

    return VADProcessor(vad_analyzer=make_vad_analyzer(sample_rate), audio_idle_timeout=AUDIO_IDLE_TIMEOUT_SECS)
