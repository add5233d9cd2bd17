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
    from pipecat.audio.vad.vad_analyzer import VADParams

    return SileroVADAnalyzer(sample_rate=sample_rate, params=VADParams(stop_secs=stop_secs))


def make_vad_processor(sample_rate: int = 16000):
    """The pipeline stage that turns inbound audio into VAD user-speaking frames."""
    from pipecat.processors.audio.vad_processor import VADProcessor

    return VADProcessor(vad_analyzer=make_vad_analyzer(sample_rate), audio_idle_timeout=AUDIO_IDLE_TIMEOUT_SECS)
