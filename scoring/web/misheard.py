"""What a misheard key entity became: "ZK3FFW" said, "said cat three" heard. Knowing the entity
was lost is half the story; a reviewer needs the words the ASR produced in its place to tell a
recogniser problem from a speaker problem.

Pure: the said and heard texts of one turn are aligned word by word (difflib), and the words the
entity occupies in the said text are mapped onto the heard text.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from voice.entities import normalise

_WORD = re.compile(r"[\w']+")
MAX_SPAN_WORDS = 8


@dataclass(frozen=True)
class Misheard:
    entity: str
    heard_as: str  # "" when the ASR heard nothing in its place


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _entity_span(entity: str, said: list[str]) -> tuple[int, int] | None:
    """The shortest run of said words that spells ``entity`` once normalised."""
    key = normalise(entity)
    if not key:
        return None
    for length in range(1, min(MAX_SPAN_WORDS, len(said)) + 1):
        for start in range(len(said) - length + 1):
            if normalise(" ".join(said[start:start + length])) == key:
                return start, start + length
    return None


def heard_as(entity: str, said_text: str, heard_text: str) -> str:
    """The heard words standing where ``entity`` was said ("" when none or it cannot be placed)."""
    said, heard = _words(said_text), _words(heard_text)
    span = _entity_span(entity, said)
    if span is None:
        return ""
    start, end = span
    matcher = difflib.SequenceMatcher(a=[w.lower() for w in said], b=[w.lower() for w in heard], autojunk=False)
    picked: list[int] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        inside = start < i1 < end if i1 == i2 else (i1 < end and i2 > start)
        if not inside:
            continue
        if tag == "equal":
            picked += [j1 + (i - i1) for i in range(max(i1, start), min(i2, end))]
        else:
            picked += list(range(j1, j2))
    if not picked:
        return ""
    return " ".join(heard[min(picked):max(picked) + 1])


def misheard_entities(entities: list[str], said_text: str, heard_text: str) -> list[Misheard]:
    return [Misheard(entity, heard_as(entity, said_text, heard_text)) for entity in entities]
