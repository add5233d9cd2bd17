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
    """Bytes that are not a frame this protocol uses."""


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
    """Parse protobuf bytes into a channel item; raises WireError on anything else."""
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
        except ValueError as exc:
            raise WireError(f"message frame is not JSON: {exc}") from exc
        if not isinstance(message, dict):
            raise WireError("message frame is not a JSON object")
        return message
    raise WireError(f"unsupported frame kind {kind!r}")
