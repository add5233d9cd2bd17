"""Key-entity transcription accuracy (harness.md §14.5 ``key_entity_accuracy``).

Pure module. An entity (confirmation code, passenger name, flight number, date, money amount)
counts as *spoken* in a turn when it occurs in what the side said, and as *intact* when the other
side's ASR text of that turn still contains it once both are normalised: spelled letters are
joined, spelling words of a code spelled a word per letter become letters ("Zurich, Kilo" ->
z, k), digit and number words become digits ("oh" -> 0, "twenty fifth" -> 25), "dash" /
"underscore" / "dot" are dropped like written punctuation, and case and spacing are ignored; a
match must start and end on token boundaries, so "ask seven oh three" is not "SK703".
"""
from __future__ import annotations

import re
from datetime import date
from typing import Any, Iterable, Mapping

from scenarios.voice_prompts import SPELLING_WORD_LETTERS

UNITS = {
    "zero": 0, "oh": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9,
}
TEENS = {
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}
TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
    "fourteenth": 14, "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18,
    "nineteenth": 19, "twentieth": 20, "thirtieth": 30,
}
# Letter names as an ASR tends to write them.
LETTER_NAMES = {
    "ay": "a", "bee": "b", "be": "b", "see": "c", "sea": "c", "cee": "c", "dee": "d", "ee": "e",
    "eff": "f", "gee": "g", "aitch": "h", "eye": "i", "jay": "j", "kay": "k", "el": "l", "ell": "l",
    "em": "m", "en": "n", "pee": "p", "cue": "q", "queue": "q", "are": "r", "ar": "r", "ess": "s",
    "tee": "t", "tea": "t", "you": "u", "vee": "v", "ex": "x", "why": "y", "zee": "z", "zed": "z",
}
SPOKEN_SYMBOLS = {"dash", "hyphen", "underscore", "dot", "point", "hash", "star"}
MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)


def _number_words(tokens: list[str]) -> list[str]:
    """Fold runs of number words into digit strings ("twenty five" -> "25", "seven oh" -> "7","0")."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if tok in TENS:
            value = TENS[tok]
            if nxt in UNITS and UNITS[nxt] > 0 and nxt != "oh":
                value += UNITS[nxt]
                i += 1
            elif nxt in ORDINALS and ORDINALS[nxt] < 10:
                value += ORDINALS[nxt]
                i += 1
            out.append(str(value))
        elif tok in UNITS and nxt == "hundred":
            value = UNITS[tok] * 100
            i += 1
            rest = tokens[i + 1 : i + 3]
            if rest and rest[0] == "and":
                i += 1
                rest = tokens[i + 1 : i + 3]
            if rest and rest[0] in TENS:
                value += TENS[rest[0]]
                i += 1
                if len(rest) > 1 and rest[1] in UNITS and UNITS[rest[1]] > 0:
                    value += UNITS[rest[1]]
                    i += 1
            elif rest and rest[0] in TEENS:
                value += TEENS[rest[0]]
                i += 1
            elif rest and rest[0] in UNITS and UNITS[rest[0]] > 0:
                value += UNITS[rest[0]]
                i += 1
            out.append(str(value))
        elif tok in UNITS:
            out.append(str(UNITS[tok]))
        elif tok in TEENS:
            out.append(str(TEENS[tok]))
        elif tok in ORDINALS:
            out.append(str(ORDINALS[tok]))
        elif tok == "double" and nxt in ("you", "u"):
            out.append("w")
            i += 1
        elif tok in LETTER_NAMES:
            out.append(LETTER_NAMES[tok])
        elif tok in SPOKEN_SYMBOLS:
            pass  # written punctuation is dropped too, so both sides agree
        else:
            out.append(tok)
        i += 1
    return out


def folded_tokens(text: str) -> list[str]:
    """Lower-case tokens with spelled letters and number words folded ("twenty fifth" -> "25",
    "ess kay" -> "s", "k"); Whisper's formatting ("25th", "SK-7-0-3", "3") lands on the same tokens."""
    text = text.lower().replace("\u2019", "'")
    text = re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", text)
    text = re.sub(r"\bx\W?ray\b", "xray", text)
    return _spelling_words(_number_words(re.findall(r"[a-z]+|\d+", text.replace("'s", " "))))


def _spelling_words(tokens: list[str]) -> list[str]:
    """A code spelled a word per letter ("Zurich, Kilo, three, Frank") folded to its characters:
    only inside a run of three or more spelled characters with two or more such words, so a
    name or "hotel" on its own stays a word."""
    def spelled(token: str) -> bool:
        return token in SPELLING_WORD_LETTERS or len(token) == 1 or token.isdigit()

    out: list[str] = []
    i = 0
    while i < len(tokens):
        j = i
        while j < len(tokens) and spelled(tokens[j]):
            j += 1
        run = tokens[i:j]
        if len(run) >= 3 and sum(1 for t in run if t in SPELLING_WORD_LETTERS) >= 2:
            out.extend(SPELLING_WORD_LETTERS.get(t, t) for t in run)
        else:
            out.extend(run)
        if j < len(tokens):
            out.append(tokens[j])
        i = j + 1
    return out


def normalise(text: str) -> str:
    """Compact comparison form: lower case, spelled/number words folded, no spaces or punctuation."""
    return "".join(folded_tokens(text))


class _Compact:
    """A text's compact form plus where its tokens start and end, so a match can be required to
    begin and end on token boundaries ("march fifty" does not contain "March 5")."""

    def __init__(self, text: str) -> None:
        self.text = ""
        self.starts: set[int] = set()
        self.ends: set[int] = set()
        for token in folded_tokens(text):
            self.starts.add(len(self.text))
            self.text += token
            self.ends.add(len(self.text))

    def contains(self, key: str) -> bool:
        if not key:
            return False
        at = self.text.find(key)
        while at != -1:
            if at in self.starts and at + len(key) in self.ends:
                return True
            at = self.text.find(key, at + 1)
        return False


def entity_in(entity: str, text: str) -> bool:
    """Whether ``text`` says ``entity``, on token boundaries of the normalised forms."""
    return _Compact(text).contains(normalise(entity))


def key_entity_accuracy(
    turns_said_heard: Iterable[Mapping[str, Any]], entities: Iterable[str]
) -> dict[str, dict[str, Any]]:
    """Per direction: entities spoken (found in a turn's ``said``) and intact (also in ``heard``).

    Each turn is ``{"role": "user"|"agent", "said": str, "heard": str | None}``; turns whose
    heard text is unknown (None) are skipped.
    """
    keys = sorted({normalise(e) for e in entities if normalise(e)})
    result = {"user_to_agent": {"spoken": 0, "intact": 0}, "agent_to_user": {"spoken": 0, "intact": 0}}
    for turn in turns_said_heard:
        heard = turn.get("heard")
        if heard is None:
            continue
        direction = "user_to_agent" if turn.get("role") == "user" else "agent_to_user"
        said_key = _Compact(str(turn.get("said") or ""))
        heard_key = _Compact(str(heard))
        for key in keys:
            if said_key.contains(key):
                result[direction]["spoken"] += 1
                if heard_key.contains(key):
                    result[direction]["intact"] += 1
    for counts in result.values():
        counts["rate"] = counts["intact"] / counts["spoken"] if counts["spoken"] else None
    return result


def spoken_date(iso: str) -> str | None:
    """'2026-03-25' -> 'March 25' (how dates are said); None when not an ISO date."""
    try:
        day = date.fromisoformat(iso[:10])
    except (TypeError, ValueError):
        return None
    return f"{MONTHS[day.month - 1].capitalize()} {day.day}"


def _money(value: Any) -> str | None:
    if isinstance(value, str):
        match = re.search(r"\$\s?(\d+(?:\.\d+)?)", value)
        if match:
            amount = float(match.group(1))
            return str(int(amount)) if amount.is_integer() else match.group(1)
    return None


def scenario_entities(db: Mapping[str, Any] | None, information_required: Mapping[str, Any] | None) -> list[str]:
    """Confirmation numbers, passenger names, flight numbers, dates and money amounts of a scenario."""
    found: list[str] = []

    def add(value: Any) -> None:
        if isinstance(value, str) and value.strip() and value.strip() not in found:
            found.append(value.strip())

    info = information_required or {}
    for key, value in info.items():
        lowered = key.lower()
        if "confirmation" in lowered or "name" in lowered or "flight_number" in lowered or "flight number" in lowered:
            add(value)
        if "date" in lowered and "birth" not in lowered and isinstance(value, str):
            add(spoken_date(value))
        add(_money(value))
    for segment in info.get("original_travel_details") or []:
        if isinstance(segment, dict):
            add(spoken_date(str(segment.get("flight_date", ""))))
    for code, reservation in ((db or {}).get("reservations") or {}).items():
        add(code)
        for passenger in reservation.get("passengers") or []:
            add(passenger.get("first_name"))
            add(passenger.get("last_name"))
        for booking in reservation.get("bookings") or []:
            for segment in booking.get("segments") or []:
                add(segment.get("flight_number"))
                add(spoken_date(str(segment.get("date", ""))))
    return found


def dates_in(text: str) -> set[tuple[int, int]]:
    """(month, day) pairs said in ``text``: "March 25", "march twenty fifth", "March 25th"."""
    tokens = folded_tokens(text)
    found: set[tuple[int, int]] = set()
    for index, token in enumerate(tokens[:-1]):
        if token in MONTHS and tokens[index + 1].isdigit() and 1 <= int(tokens[index + 1]) <= 31:
            found.add((MONTHS.index(token) + 1, int(tokens[index + 1])))
    return found
