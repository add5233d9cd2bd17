"""Secrets out of everything stored or shown: keys pasted into URLs (``https://key@host``,
``?api_key=…``) and inline keys are replaced by ``<redacted>`` in run_args.json, rows, pages and logs."""
from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

REDACTED = "<redacted>"
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"]+")


def redact_url(url: str) -> str:
    """``url`` with its userinfo and every query-string value replaced by ``<redacted>``."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = "&".join(f"{pair.split('=', 1)[0]}={REDACTED}" for pair in parts.query.split("&") if pair)
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def redact_urls_in(text: str) -> str:
    """Every URL inside ``text`` (a command-line argument, a log line) redacted like ``redact_url``."""
    return _URL_IN_TEXT.sub(lambda match: redact_url(match.group(0)), text)
