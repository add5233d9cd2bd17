"""``evaluation_log.txt``: the runner's own log (truncated on a fresh run, appended on resume)."""
from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path

from scoring.runs.options import redact_urls_in


class EvalLog:
    """Line-oriented, thread-safe, flushed on every line so a killed run keeps its log."""

    def __init__(self, path: Path, *, append: bool) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._handle = open(self.path, "a" if append else "w", encoding="utf-8")

    def write(self, message: str, level: str = "INFO") -> None:
        stamp = datetime.now().isoformat(timespec="seconds")
        with self._lock:
            # A URL in a message (a connection error, say) may carry a pasted key.
            for line in redact_urls_in(str(message)).splitlines() or [""]:
                self._handle.write(f"{stamp} {level} {line}\n")
            self._handle.flush()

    def warning(self, message: str) -> None:
        self.write(message, "WARNING")

    def close(self) -> None:
        with self._lock:
            if not self._handle.closed:
                self._handle.close()
