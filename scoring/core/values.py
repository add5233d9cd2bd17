"""Type tests for values read back from JSON files written by any version of the harness."""
from __future__ import annotations

from typing import Any


def is_int(value: Any) -> bool:
    """A JSON integer (``True`` is not a count)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A JSON number (``True`` is not a score)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)
