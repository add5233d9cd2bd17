"""Serving a file with HTTP byte ranges (RFC 9110 §14), so a browser can seek in a recording:
without ``206 Partial Content`` Chromium treats a WAV as unseekable and every click on a turn
starts the recording again from 0.

One range per request (what media elements ask for); a header this module cannot honour
exactly is answered with the whole file, an unsatisfiable one with 416, as the RFC allows.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import IO, Iterator

from django.http import FileResponse, HttpRequest, HttpResponse, StreamingHttpResponse

CHUNK = 64 * 1024
_SINGLE_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def parse_range(header: str, size: int) -> tuple[int, int] | None | bool:
    """``(first, last)`` inclusive for one satisfiable range; None to send the whole file (no or
    unusable header, several ranges); False when the range lies outside the file (416)."""
    match = _SINGLE_RANGE.match(header.strip()) if header else None
    if match is None:
        return None
    first_text, last_text = match.groups()
    if not first_text and not last_text:
        return None
    if not first_text:  # "bytes=-N": the last N bytes
        length = int(last_text)
        if length == 0 or size == 0:
            return False
        return max(0, size - length), size - 1
    first = int(first_text)
    last = int(last_text) if last_text else size - 1
    if first >= size:
        return False
    if last < first:
        return None  # syntactically invalid: ignore the header
    return first, min(last, size - 1)


def _chunks(handle: IO[bytes], remaining: int) -> Iterator[bytes]:
    try:
        while remaining > 0:
            block = handle.read(min(CHUNK, remaining))
            if not block:
                return
            remaining -= len(block)
            yield block
    finally:
        handle.close()


def ranged_file_response(request: HttpRequest, path: Path, content_type: str) -> HttpResponse:
    """The file, or the one byte range the request asks for, with ``Accept-Ranges: bytes``."""
    size = path.stat().st_size
    wanted = parse_range(request.headers.get("Range", ""), size)
    if wanted is False:
        response: HttpResponse = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
    elif wanted is None:
        response = FileResponse(path.open("rb"), content_type=content_type)
    else:
        first, last = wanted
        handle = path.open("rb")
        handle.seek(first)
        response = StreamingHttpResponse(_chunks(handle, last - first + 1), status=206, content_type=content_type)
        response["Content-Range"] = f"bytes {first}-{last}/{size}"
        response["Content-Length"] = str(last - first + 1)
    response["Accept-Ranges"] = "bytes"
    return response
