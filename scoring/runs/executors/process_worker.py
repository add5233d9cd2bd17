"""A worker process of the local executor (``run_eval --processes N``): it delivers the attempts
its coordinator sends, several at once, and reports everything back on a pipe.

Why processes: one Python process runs on one core at a time, so a voice run's calls (VAD,
Whisper, Piper and pipecat's frame handling, mostly Python) share one core however many the
machine has. N processes use N cores with nothing else installed: the rows go to the same
database (SQLite in WAL mode takes writers from several processes), and the progress, the log
lines and the outcome of each attempt go back to the coordinator, which shows them, writes
``evaluation_log.txt`` and the run's summary exactly as for attempts it ran itself.

Protocol, one JSON object per line. In, on stdin: ``{"id", "payload"}`` (``plan_payload``). Out,
on the file descriptor named by ``--events-fd``: ``{"id", "event", ...}`` progress,
``{"id", "log", "level"}``, then ``{"id", "done", "metrics"}`` or ``{"id", "error"}``. The end
of stdin (the coordinator finished, was cancelled or died) cancels what is still running.

Run as ``python -m scoring.runs.executors.process_worker --events-fd FD`` (the coordinator does), or
forked from ``run_eval`` (``executors.forked``).
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from typing import Any, Callable

Write = Callable[[dict[str, Any]], None]


class PipeProgress:
    """A ``ProgressSink`` that tells the coordinator about one attempt."""

    def __init__(self, write: Write, key: int) -> None:
        self._write, self._key = write, key

    def run_started(self, **_: Any) -> None: ...

    def run_finished(self, **_: Any) -> None: ...

    def scenario_started(self, name: str) -> None:
        self._write({"id": self._key, "event": "scenario_started", "name": name})

    def turn(self, name: str, role: str, text: str) -> None:
        self._write({"id": self._key, "event": "turn", "name": name, "role": role, "text": text})

    def scenario_finished(self, name: str, metrics: dict[str, Any]) -> None:
        self._write({"id": self._key, "event": "scenario_finished", "name": name, "metrics": metrics})


def _writer(fd: int) -> Write:
    stream = os.fdopen(fd, "w", buffering=1, encoding="utf-8")
    lock = threading.Lock()  # events may come from the loop and from a tool's thread

    def write(message: dict[str, Any]) -> None:
        line = json.dumps(message, default=str) + "\n"
        with lock:
            stream.write(line)

    return write


async def _deliver_one(key: int, payload: dict[str, Any], write: Write) -> None:
    from scoring.runs.executors.delivery import deliver
    from scoring.runs.executors.plan import plan_from_payload

    events = PipeProgress(write, key)
    try:
        plan = plan_from_payload(payload, events)
        delivery = await deliver(plan, events, lambda line, level="INFO": write({"id": key, "log": line,
                                                                                 "level": level}))
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        write({"id": key, "error": f"{type(exc).__name__}: {exc}"})
        return
    write({"id": key, "done": delivery.status, "metrics": delivery.metrics})


async def serve(events_fd: int, commands_fd: int = 0) -> None:
    """Deliver what arrives on ``commands_fd`` (stdin for a started worker, a pipe for a forked one)."""
    write = _writer(events_fd)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=16 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(commands_fd, "rb"))
    running: set[asyncio.Task[None]] = set()
    while line := await reader.readline():
        message = json.loads(line)
        task = asyncio.ensure_future(_deliver_one(int(message["id"]), message["payload"], write))
        running.add(task)
        task.add_done_callback(running.discard)
    for task in list(running):  # the coordinator is gone or cancelled the run
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)


def main(argv: list[str]) -> None:
    events_fd = int(argv[argv.index("--events-fd") + 1])
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evasite.settings")
    import django

    django.setup()
    asyncio.run(serve(events_fd))


if __name__ == "__main__":
    main(sys.argv)
