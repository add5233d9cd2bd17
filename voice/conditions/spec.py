"""Condition specs: ``--conditions clean,phone,noise:snr=5,phone:loss=5%+noise:babble:to=user``.

Grammar: conditions are separated by ``,``; one condition is parts joined by ``+`` (applied in
that order); a part is ``kind[:value][:key=value]...`` where the bare value fills the kind's
first parameter (``rate:1.3``, ``voice:espeak``, ``noise:babble``). Every audio part takes
``seed=N`` and ``to=agent|user`` (who hears the degraded audio; default the agent, i.e. the
passenger's speech on its way to the agent under test).

Each condition has a canonical ``spec`` (parses back to itself) and a ``name`` made only of
``[a-z0-9.+-]`` for directory names: kind, then its main values, then any parameter that is
not at its default (``noise-pink-snr5``, ``phone-loss5``, ``rate-1.3``, ``phone+noise-babble-snr10-touser``).
Defaults are part of that contract: changing one would silently rename the meaning of old runs.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from voice.conditions.base import AudioCondition, Chain, Passthrough, derive_seed
from voice.conditions.noise import NOISE_TYPES, Noise
from voice.conditions.phone import PLC_MODES, PhoneLine
from voice.conditions.speaker import SECOND_VOICES, BargeInSettings, SpeakerSettings

HEARERS = ("agent", "user")
NAME_CHARS = re.compile(r"^[a-z0-9.+-]+$")


class ConditionSpecError(ValueError):
    """A condition spec that cannot be used; the message is one line meant for the operator."""


@dataclass(frozen=True)
class Param:
    """One parameter of a condition kind: how to read it, its bounds, how it shows in names."""

    key: str
    unit: str  # "choice" | "db" | "percent" | "ms" | "s" | "factor" | "int"
    default: Any = None  # None: required
    low: float = -math.inf
    high: float = math.inf
    choices: tuple[str, ...] = ()
    label: str = ""
    """Prefix in the directory name (``snr`` → ``snr5``); empty shows the bare value."""
    always_named: bool = False
    """Shown in the name even at its default (the main values: noise type and SNR, rate...)."""


SEED = Param("seed", "int", 0, 0, 2 ** 63 - 1, label="seed")
TO = Param("to", "choice", "agent", choices=HEARERS, label="to")
AUDIO_COMMON = (SEED, TO)

KINDS: dict[str, tuple[Param, ...]] = {
    "clean": (),
    "noise": (
        Param("type", "choice", "pink", choices=NOISE_TYPES, always_named=True),
        Param("snr", "db", 10.0, -20.0, 60.0, label="snr", always_named=True),
    ) + AUDIO_COMMON,
    "phone": (
        Param("loss", "percent", 0.0, 0.0, 50.0, label="loss"),
        Param("jitter", "ms", 0.0, 0.0, 500.0, label="jitter"),
        Param("buffer", "ms", 60.0, 0.0, 1000.0, label="buffer"),
        Param("plc", "choice", "silence", choices=PLC_MODES),
    ) + AUDIO_COMMON,
    "rate": (Param("factor", "factor", None, 0.5, 2.0, always_named=True),),
    "voice": (Param("name", "choice", None, choices=SECOND_VOICES, always_named=True),),
    "barge-in": (
        Param("after", "s", 4.0, 0.5, 60.0, label="after"),
        Param("max", "int", 3, 1, 100, label="max"),
    ),
}
AUDIO_KINDS = ("noise", "phone")
SPEAKER_KINDS = ("rate", "voice")


UNIT_SUFFIXES: dict[str, tuple[tuple[str, float], ...]] = {
    "db": (("db", 1.0),),
    "percent": (("%", 1.0),),
    "ms": (("ms", 1.0), ("s", 1000.0)),
    "s": (("ms", 0.001), ("s", 1.0)),
    "factor": (("x", 1.0),),
}
"""Suffixes a number may carry, and what each multiplies it by (into the parameter's unit)."""
UNIT_WORDS = {"db": "a number of dB", "percent": "a percentage such as 5%", "ms": "a duration such as 20ms",
              "s": "a duration such as 2s", "factor": "a number such as 1.3"}


def _number(text: str, unit: str) -> float:
    """``text`` as a finite number in ``unit``, after its suffix (``20ms``, ``2s``, ``5%``)."""
    scale = 1.0
    for suffix, factor in UNIT_SUFFIXES[unit]:
        if text.endswith(suffix):
            text, scale = text[: -len(suffix)], factor
            break
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value * scale


def _read(param: Param, raw: str) -> Any:
    """The value of ``param`` from its text; ValueError with the reason when unusable."""
    text = raw.strip().lower()
    if param.unit == "choice":
        if text not in param.choices:
            raise ValueError(f"{param.key} must be one of {', '.join(param.choices)}, got {raw!r}")
        return text
    if param.unit == "int":
        if not text.isdigit():
            raise ValueError(f"{param.key} must be a whole number, got {raw!r}")
        value: float = int(text)
    else:
        try:
            value = _number(text, param.unit)
        except ValueError:
            raise ValueError(f"{param.key} must be {UNIT_WORDS[param.unit]}, got {raw!r}") from None
    if not param.low <= value <= param.high:
        raise ValueError(f"{param.key} must be between {_show(param, param.low)} and {_show(param, param.high)}, "
                         f"got {_show(param, value)}")
    return value


def _plain(value: float) -> str:
    return f"{value:.6g}"


def _show(param: Param, value: Any) -> str:
    """The value as written in a canonical spec (``5%``, ``20ms``, ``2s``, ``1.3``)."""
    if param.unit in ("choice", "int"):
        return str(value)
    suffix = {"percent": "%", "ms": "ms", "s": "s"}.get(param.unit, "")
    return _plain(float(value)) + suffix


@dataclass(frozen=True)
class ConditionPart:
    """One kind with every parameter filled in (defaults included), in its declared order."""

    kind: str
    values: tuple[tuple[str, Any], ...]

    def __getitem__(self, key: str) -> Any:
        return dict(self.values)[key]

    @property
    def params(self) -> tuple[Param, ...]:
        return KINDS[self.kind]

    def _shown(self) -> list[tuple[Param, Any]]:
        return [(p, self[p.key]) for p in self.params if p.always_named or self[p.key] != p.default]

    @property
    def spec(self) -> str:
        return ":".join([self.kind] + [f"{p.key}={_show(p, v)}" for p, v in self._shown()])

    @property
    def name(self) -> str:
        pieces = [self.kind]
        for p, v in self._shown():
            if p.unit in ("choice", "int"):
                pieces.append(f"{p.label}{v}")
            else:
                pieces.append(f"{p.label}{_plain(float(v))}")
        return "-".join(pieces)

    def build_audio(self, seed: int) -> AudioCondition:
        """The PCM transform of an audio part (noise, phone), seeded for one stream."""
        if self.kind == "noise":
            return Noise(kind=self["type"], snr_db=self["snr"], seed=seed)
        if self.kind == "phone":
            return PhoneLine(loss_pct=self["loss"], jitter_ms=self["jitter"], buffer_ms=self["buffer"],
                             plc=self["plc"], seed=seed)
        raise ValueError(f"{self.kind} is not an audio condition")


@dataclass(frozen=True)
class Condition:
    """One entry of ``--conditions``: its parts, canonical spec and directory-safe name."""

    parts: tuple[ConditionPart, ...] = field(default_factory=tuple)

    @property
    def spec(self) -> str:
        return "+".join(part.spec for part in self.parts) or "clean"

    @property
    def name(self) -> str:
        return "+".join(part.name for part in self.parts) or "clean"

    @property
    def is_clean(self) -> bool:
        return all(part.kind == "clean" for part in self.parts)

    def audio_for(self, hearer: str, *, stream: str = "") -> AudioCondition:
        """What ``hearer`` ("agent" or "user") hears through, for one stream (say, a scenario
        attempt): a fresh, seeded chain of this condition's audio parts that target it, or a
        passthrough. ``stream`` keys the seeds so attempts differ yet repeat exactly."""
        if hearer not in HEARERS:
            raise ValueError(f"hearer must be one of {', '.join(HEARERS)}, got {hearer!r}")
        chain = [part.build_audio(derive_seed(part["seed"], stream, hearer, index, part.kind))
                 for index, part in enumerate(self.parts)
                 if part.kind in AUDIO_KINDS and part["to"] == hearer]
        if not chain:
            return Passthrough()
        return chain[0] if len(chain) == 1 else Chain(chain)

    def audio_conditions(self, *, stream: str = "") -> dict[str, AudioCondition]:
        """``run_session(conditions=...)``: each hearing side with audio parts, freshly built."""
        return {hearer: self.audio_for(hearer, stream=stream) for hearer in HEARERS
                if any(part.kind in AUDIO_KINDS and part["to"] == hearer for part in self.parts)}

    @property
    def speaker(self) -> SpeakerSettings:
        """How the passenger's TTS is to be built under this condition."""
        found = {part.kind: part for part in self.parts if part.kind in SPEAKER_KINDS}
        return SpeakerSettings(voice=found["voice"]["name"] if "voice" in found else None,
                               rate=found["rate"]["factor"] if "rate" in found else 1.0)

    @property
    def barge_in(self) -> Optional[BargeInSettings]:
        for part in self.parts:
            if part.kind == "barge-in":
                return BargeInSettings(after_s=part["after"], max_cuts=int(part["max"]))
        return None

    def describe(self) -> dict[str, Any]:
        """For run_args.json and metadata.json: enough to rebuild it (``spec``) and to read it."""
        return {"name": self.name, "spec": self.spec,
                "parts": [{"kind": part.kind, **dict(part.values)} for part in self.parts]}


CLEAN = Condition(parts=(ConditionPart("clean", ()),))


def _parse_part(text: str, whole: str) -> ConditionPart:
    def fail(reason: str) -> ConditionSpecError:
        return ConditionSpecError(f"condition {whole!r}: {reason}")

    pieces = [piece.strip() for piece in text.split(":")]
    kind = pieces[0].lower()
    if kind not in KINDS:
        kinds = ", ".join(KINDS)
        raise fail(f"unknown kind {pieces[0]!r} (use one of {kinds})" if kind else f"empty part (use one of {kinds})")
    params = KINDS[kind]
    by_key = {p.key: p for p in params}
    given: dict[str, Any] = {}
    for position, piece in enumerate(pieces[1:]):
        if not piece:
            raise fail("empty parameter (two ':' in a row?)")
        key, sep, raw = piece.partition("=")
        key = key.strip().lower()
        if not sep:
            if position != 0 or not params:
                raise fail(f"{piece!r} needs a name, as in key=value" if params else f"{kind} takes no parameters")
            key, raw = params[0].key, piece
        if key not in by_key:
            usable = ", ".join(by_key) or "none"
            raise fail(f"{kind} has no parameter {key!r} (it takes {usable})")
        if key in given:
            raise fail(f"{key} given twice")
        try:
            given[key] = _read(by_key[key], raw)
        except ValueError as exc:
            raise fail(str(exc)) from None
    missing = [p.key for p in params if p.default is None and p.key not in given]
    if missing:
        example = {"rate": "rate:1.3", "voice": "voice:espeak"}.get(kind, f"{kind}:{missing[0]}=...")
        raise fail(f"{kind} needs {missing[0]} (for example {example})")
    if kind == "phone" and "buffer" in given and not given.get("jitter"):
        raise fail("buffer only matters with jitter (phone:jitter=20ms:buffer=80ms)")
    values = tuple((p.key, given.get(p.key, p.default)) for p in params)
    return ConditionPart(kind, values)


def parse_condition(text: str) -> Condition:
    """One condition (``phone:loss=5%+noise:babble:snr=10``); ConditionSpecError if unusable."""
    whole = text.strip()
    if not whole:
        raise ConditionSpecError("empty condition (use clean for none)")
    parts = tuple(_parse_part(piece, whole) for piece in whole.split("+"))
    kinds = [part.kind for part in parts]
    if "clean" in kinds and len(parts) > 1:
        raise ConditionSpecError(f"condition {whole!r}: clean cannot be combined with other parts")
    for kind in set(kinds):
        if kinds.count(kind) > 1 and kind not in AUDIO_KINDS:
            raise ConditionSpecError(f"condition {whole!r}: {kind} appears twice")
    condition = Condition(parts=parts)
    assert NAME_CHARS.match(condition.name), condition.name
    return condition


def parse_conditions(text: str) -> list[Condition]:
    """A ``--conditions`` list; refuses an empty list and two entries with the same meaning."""
    items = [piece.strip() for piece in text.split(",")]
    if not any(items):
        raise ConditionSpecError("no conditions given (for example --conditions clean,phone,noise:snr=5)")
    if not all(items):
        raise ConditionSpecError(f"empty entry in conditions {text!r} (a stray ',')")
    conditions = [parse_condition(item) for item in items]
    seen: dict[str, str] = {}
    for item, condition in zip(items, conditions):
        if condition.name in seen:
            raise ConditionSpecError(f"conditions {seen[condition.name]!r} and {item!r} are the same ({condition.name})")
        seen[condition.name] = item
    return conditions

