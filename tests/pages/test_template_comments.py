"""Django's ``{# #}`` comment ends on its own line: one spread over two lines is not a comment
and reaches the page as text (the run page once showed its conditions table's note). Notes that
need more than a line use ``{% comment %}``."""
from __future__ import annotations

import re

from tests.services import REPO

_OPEN = re.compile(r"\{#(?:(?!#\}).)*$", re.M)


def test_no_template_starts_a_comment_it_does_not_end_on_the_same_line() -> None:
    unclosed = [f"{path.relative_to(REPO)}:{text[:match.start()].count(chr(10)) + 1}"
                for path in sorted((REPO / "templates").rglob("*.html"))
                for text in [path.read_text()] for match in _OPEN.finditer(text)]
    assert unclosed == []


def test_the_check_finds_a_comment_left_open() -> None:
    assert _OPEN.search("<p>{# a note that goes on\n   over two lines #}</p>")
    assert not _OPEN.search("<p>{# one line #}</p>\n{% comment %}two\nlines{% endcomment %}")
