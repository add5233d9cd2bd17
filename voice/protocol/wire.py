"""Wire codec: pipecat's protobuf ``Frame`` format (harness.md §2.2).

Audio travels as an ``audio`` frame (s16le mono + sample rate), control traffic as a ``message``
frame holding the RTVI envelope as JSON text; byte-compatible with pipecat's
``ProtobufFrameSerializer``.
"""
from __future__ import annotations

import json

from pipecat.frames.protobufs import frames_pb2

from voice.protocol.channel import AudioChunk, Item


class WireError(ValueError):
    """Bytes that are not a pipecat frame at all: the connection cannot be trusted any more."""


class UnusedFrame(Exception):
    """A well-formed frame this protocol does not use; the receiver skips it.

    Why not an error: pipecat's own transports send ``text``, ``transcription`` and
    ``interruption`` frames (an interruption on every barge-in), and a message frame with an
    unreadable payload says nothing about the frames that follow.
    """

    def __init__(self, reason: str, *, malformed: bool = False) -> None:
        super().__init__(reason)
        self.malformed = malformed
        """True for a message frame whose payload is unreadable (worth a warning)."""


def encode(item: Item) -> bytes:
    """Serialise one channel item to protobuf bytes."""
    frame = frames_pb2.Frame()
    if isinstance(item, AudioChunk):
        frame.audio.audio = item.pcm
        frame.audio.sample_rate = item.sample_rate
        frame.audio.num_channels = item.num_channels
    elif isinstance(item, dict):
        frame.message.data = json.dumps(item)
    else:
        raise WireError(f"cannot encode {type(item).__name__}")
    return frame.SerializeToString()


def decode(data: bytes) -> Item:
    """Parse protobuf bytes into a channel item.

    Raises ``WireError`` for bytes that are not a protobuf frame and ``UnusedFrame`` for a frame
    kind this protocol ignores or a message frame whose payload is not a JSON object.
    """
    try:
        frame = frames_pb2.Frame.FromString(data)
    except Exception as exc:  # protobuf raises DecodeError and friends
        raise WireError(f"not a protobuf frame: {exc}") from exc
    kind = frame.WhichOneof("frame")
    if kind == "audio":
        return AudioChunk(
            pcm=frame.audio.audio,
            sample_rate=frame.audio.sample_rate,
            num_channels=frame.audio.num_channels or 1,
        )
    if kind == "message":
        try:
            message = json.loads(frame.message.data)
        except Exception as exc:  # ValueError, and RecursionError for absurdly nested JSON
            raise UnusedFrame(f"message frame is not JSON: {type(exc).__name__}", malformed=True) from exc
        if not isinstance(message, dict):
            raise UnusedFrame("message frame is not a JSON object", malformed=True)
        return message
    raise UnusedFrame(f"{kind or 'empty'} frame")
