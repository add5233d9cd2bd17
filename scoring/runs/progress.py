"""Live progress of a run: a terminal display and the sink interface the web UI also implements."""
from __future__ import annotations

import sys
import threading
import time
from typing import Any, Protocol, TextIO


class ProgressSink(Protocol):
    def run_started(self, *, run_label: str, total: int, already_done: int) -> None: ...
    def scenario_started(self, name: str) -> None: ...
    def turn(self, name: str, role: str, text: str) -> None: ...
    def scenario_finished(self, name: str, metrics: dict[str, Any]) -> None: ...
    def run_finished(self, *, success_rate: float | None) -> None: ...


class NullProgress:
    """Discards everything (tests, library use)."""

    def run_started(self, **_: Any) -> None: ...
    def scenario_started(self, name: str) -> None: ...
    def turn(self, name: str, role: str, text: str) -> None: ...
    def scenario_finished(self, name: str, metrics: dict[str, Any]) -> None: ...
    def run_finished(self, **_: Any) -> None: ...


class TerminalProgress:
    """One status line (done, passing, running, elapsed) redrawn in place on a TTY; on a pipe,
    one line per finished scenario so CI logs stay readable."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._lock = threading.Lock()
        self.total = self.done = self.passing = 0
        self.running: set[str] = set()
        self.started = time.monotonic()

    def _elapsed(self) -> str:
        seconds = int(time.monotonic() - self.started)
        return f"{seconds // 60:02d}:{seconds % 60:02d}"

    def _status(self) -> str:
        return (f"[{self.done}/{self.total}] passing {self.passing} | running {len(self.running)} "
                f"| elapsed {self._elapsed()}")

    def _redraw(self) -> None:
        if self.tty:
            self.stream.write("\r\033[K" + self._status())
            self.stream.flush()

    def run_started(self, *, run_label: str, total: int, already_done: int) -> None:
        with self._lock:
            self.total, self.done = total, already_done
            self.stream.write(f"{run_label}: {total} scenario(s), {already_done} already complete\n")
            self._redraw()

    def scenario_started(self, name: str) -> None:
        with self._lock:
            self.running.add(name)
            self._redraw()

    def turn(self, name: str, role: str, text: str) -> None:
        return None

    def scenario_finished(self, name: str, metrics: dict[str, Any]) -> None:
        with self._lock:
            self.running.discard(name)
            self.done += 1
            ok = metrics.get("is_successful") is True
            self.passing += ok
            line = (f"{'PASS' if ok else 'FAIL'} {name} ({metrics.get('stop_reason')}, "
                    f"{metrics.get('total_turns')} turns) {self._status()}")
            if self.tty:
                self.stream.write("\r\033[K" + line + "\n")
                self._redraw()
            else:
                self.stream.write(line + "\n")
            self.stream.flush()

    def run_finished(self, *, success_rate: float | None) -> None:
        with self._lock:
            rate = "N/A" if success_rate is None else f"{success_rate * 100:.2f}%"
            if self.tty:
                self.stream.write("\r\033[K")
            self.stream.write(f"Finished {self.done}/{self.total} in {self._elapsed()}; success rate {rate}\n")
            self.stream.flush()
