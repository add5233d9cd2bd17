"""Pydantic-v2 "lax mode" type coercion, written by hand (tools.md §1.3).

Each coercer returns ``(True, value)`` or ``(False, validator_text)``; the texts mimic pydantic's so
the LLM sees familiar guidance. Only ASCII digits count as digits.
"""
from __future__ import annotations

import math
import re
from typing import Any

Coerced = tuple[bool, Any]

_INT_TEXT = re.compile(r"[+-]?[0-9]+(?:\.0+)?")
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_TRUE_WORDS = frozenset({"true", "yes", "on", "1", "t", "y"})
_FALSE_WORDS = frozenset({"false", "no", "off", "0", "f", "n"})


def as_string(value: Any) -> Coerced:
    """Only real strings: numbers are not converted and nothing is trimmed."""
    if isinstance(value, str):
        return True, value
    return False, "Input should be a valid string"


def as_integer(value: Any) -> Coerced:
    """Ints, bools, whole floats and whole numeric strings (whitespace allowed)."""
    if isinstance(value, bool):
        return True, int(value)
    if isinstance(value, int):
        return True, value
    if isinstance(value, float):
        if not math.isfinite(value):
            return False, "Input should be a finite number"
        if value != int(value):
            return False, "Input should be a valid integer, got a number with a fractional part"
        return True, int(value)
    if isinstance(value, str):
        text = value.strip()
        if _INT_TEXT.fullmatch(text):
            return True, int(text.split(".")[0])
        if _FLOAT_TEXT.fullmatch(text):
            return False, "Input should be a valid integer, got a number with a fractional part"
        return False, "Input should be a valid integer, unable to parse string as an integer"
    return False, "Input should be a valid integer"


def as_number(value: Any) -> Coerced:
    """Ints, floats, bools and numeric strings, always returned as a finite float.

    Non-finite values are refused (a project choice): they would make the stored DB non-JSON.
    """
    if isinstance(value, (bool, int, float)):
        try:
            number = float(value)
        except OverflowError:
            return False, "Input should be a finite number"
    elif isinstance(value, str):
        text = value.strip()
        if not _FLOAT_TEXT.fullmatch(text):
            return False, "Input should be a valid number, unable to parse string as a number"
        number = float(text)
    else:
        return False, "Input should be a valid number"
    if not math.isfinite(number):
        return False, "Input should be a finite number"
    return True, number


def as_boolean(value: Any) -> Coerced:
    """Bools, the numbers 0/1 and the usual yes/no words (case-insensitive)."""
    if isinstance(value, bool):
        return True, value
    if isinstance(value, (int, float)) and value in (0, 1):
        return True, bool(value)
    if isinstance(value, str):
        word = value.lower()
        if word in _TRUE_WORDS:
            return True, True
        if word in _FALSE_WORDS:
            return True, False
        return False, "Input should be a valid boolean, unable to interpret input"
    return False, "Input should be a valid boolean"


def as_choice(value: Any, choices: tuple[str, ...]) -> Coerced:
    """Exact, case-sensitive membership in ``choices``."""
    if isinstance(value, str) and value in choices:
        return True, value
    quoted = [f"'{choice}'" for choice in choices]
    listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f" or {quoted[-1]}"
    return False, f"Input should be {listed}"


def as_string_list(value: Any) -> Coerced:
    """A JSON array whose items are all strings (a bare string is not a list)."""
    if not isinstance(value, list):
        return False, "Input should be a valid list"
    for item in value:
        if not isinstance(item, str):
            return False, "Input should be a valid string"
    return True, list(value)
