"""The two ways a session runs (architecture.md, Speech): ``voice`` relays audio paced like a call,
``text`` relays finalised utterances only. Defined once for the bridge, the bots and the runs."""
from __future__ import annotations

from typing import Literal

Modality = Literal["voice", "text"]
MODALITIES: tuple[Modality, ...] = ("voice", "text")


def check_modality(value: object) -> Modality:
    """``value`` if it names a modality, else ValueError naming the choices."""
    if value not in MODALITIES:
        raise ValueError(f"modality must be one of {', '.join(MODALITIES)}, not {value!r}")
    return value  # type: ignore[return-value]
