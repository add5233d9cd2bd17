"""Text cells of every CSV the project writes, safe to open in a spreadsheet.

Why: a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read as a
formula by Excel, LibreOffice and Google Sheets, and transcripts (what an agent under test said)
and review notes are typed by people and models we do not trust. Such a cell gets a leading
``'``, the usual neutraliser: the spreadsheet shows the text, and no formula ever runs.
"""
from __future__ import annotations

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(text: str) -> str:
    """``text`` with a leading ``'`` when a spreadsheet would run it as a formula."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text
