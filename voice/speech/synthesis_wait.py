"""How long a local synthesizer may take to produce a sentence's next audio before pipecat calls
its audio context finished.

pipecat's default (3 s) suits a streaming HTTP voice. Piper, hibari and espeak-ng compute on this
machine's CPUs: on a busy one a long sentence can take longer than 3 s, and pipecat would then
close the context silently ("completed with no audio"), say the bot stopped speaking in the middle
of its turn, and reopen it when the audio comes. A context that ends normally ends at once, so a
longer wait costs nothing on a quiet machine.
"""
from __future__ import annotations

LOCAL_SYNTHESIS_WAIT_S = 10.0


def with_synthesis_wait(kwargs: dict) -> dict:
    """``kwargs`` for a local ``TTSService``, with the longer wait unless the caller set one."""
    return {"stop_frame_timeout_s": LOCAL_SYNTHESIS_WAIT_S, **kwargs}
