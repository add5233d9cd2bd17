"""The local executor over worker processes (``run_eval --processes N``): the coordinating side.

The coordinator takes N ``process_worker`` processes (forked by ``run_eval`` before its event
loop started where that is safe, ``executors.forked``; otherwise started as new interpreters),
hands each pending attempt to the one with the fewest in flight (``--concurrency`` in all), and
turns their reports back into what a local run does itself: progress events,
``evaluation_log.txt`` lines, and the accepted attempt.
A worker that dies takes its attempts with it: the run ends ``interrupted`` and ``--resume``
runs them again (what was recorded stays recorded; an unfinished directory is moved aside).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from asyncio.subprocess import PIPE
from dataclasses import asdict
from pathlib import Path
from typing import Any

from django.conf import settings

from scoring.runs.executors.base import QueueItem, RunContext, RunError, RunInterrupted, run_all
from scoring.runs.executors import forked
from scoring.runs.executors.delivery import HELD, LOST
from scoring.runs.executors.plan import plan_payload

STOP_GRACE_SECONDS = 10.0
"""At the end, how long a worker may take to wind down its attempts before it is killed."""


class WorkerProcess:
    """One ``process_worker`` and the attempts it has in flight."""

    def __init__(self, run: RunContext, proc: asyncio.subprocess.Process | forked.ForkedProcess,
                 events: asyncio.StreamReader) -> None:
        self.run, self.proc = run, proc
        self.in_flight: dict[int, tuple[QueueItem, asyncio.Future[dict[str, Any]]]] = {}
        self._reader = asyncio.ensure_future(self._read(events))

    @classmethod
    async def start(cls, run: RunContext) -> "WorkerProcess":
        """A worker forked before the loop started (``forked.prefork``) if one waits, else a new
        interpreter."""
        if (child := forked.adopt()) is not None:
            proc, events = await forked.ForkedProcess.connect(child)
            return cls(run, proc, events)
        read_fd, write_fd = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "scoring.runs.executors.process_worker", "--events-fd", str(write_fd),
                stdin=PIPE, pass_fds=(write_fd,), cwd=settings.BASE_DIR,
                start_new_session=True)  # Ctrl-C reaches the coordinator, which winds the workers down
        finally:
            os.close(write_fd)
        events = asyncio.StreamReader(limit=16 * 1024 * 1024)
        await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(events), os.fdopen(read_fd, "rb"))
        return cls(run, proc, events)

    async def deliver(self, key: int, item: QueueItem, options: dict[str, Any]) -> dict[str, Any]:
        """Deliver ``item`` in this process; the accepted attempt's metrics."""
        done: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.in_flight[key] = (item, done)
        payload = plan_payload(run_id=self.run.run_id, session_dir=self.run.session_dir, options=options, item=item)
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"id": key, "payload": payload}) + "\n").encode())
        try:
            await self.proc.stdin.drain()
            return await done
        finally:
            self.in_flight.pop(key, None)

    async def _read(self, events: asyncio.StreamReader) -> None:
        """Turn the worker's reports into progress, log lines and outcomes until it ends; then
        whatever it still held is lost with it (the run is interrupted, to be resumed)."""
        ended = "ended"
        try:
            while line := await events.readline():
                self._report(json.loads(line))
        except (ValueError, KeyError, TypeError) as exc:  # a report this side cannot read
            ended = f"sent an unreadable report ({type(exc).__name__}: {exc}) and was stopped"
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        code = await self.proc.wait()
        for item, done in list(self.in_flight.values()):
            if not done.done():
                done.set_exception(RunInterrupted(
                    f"worker process {self.proc.pid} {ended} (exit {code}) during {item.dir_name}"))

    def _report(self, message: dict[str, Any]) -> None:
        progress, entry = self.run.progress, self.in_flight.get(int(message["id"]))
        if "event" in message:
            kind = message["event"]
            if kind == "scenario_started":
                progress.scenario_started(message["name"])
            elif kind == "turn":
                progress.turn(message["name"], message["role"], message["text"])
            elif kind == "scenario_finished":
                progress.scenario_finished(message["name"], message["metrics"])
        elif "log" in message:
            self.run.log.write(message["log"], message.get("level", "INFO"))
        elif entry is not None and not entry[1].done():
            if "error" in message:
                entry[1].set_exception(RunError(f"{entry[0].dir_name}: {message['error']}"))
            elif message["done"] in (HELD, LOST):  # no leases here: nobody else may hold it
                entry[1].set_exception(RunError(f"{entry[0].dir_name}: {message['done']}"))
            else:
                entry[1].set_result(message.get("metrics") or {})

    async def stop(self) -> None:
        """Close its input (it cancels what is still running), then wait, then kill."""
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(asyncio.shield(self.proc.wait()), STOP_GRACE_SECONDS)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(self._reader, STOP_GRACE_SECONDS)


async def run_in_processes(run: RunContext, pending: list[QueueItem]) -> None:
    """Every pending item delivered by ``run.options.processes`` worker processes."""
    options = run.options
    count = max(1, min(options.processes, options.concurrency or 1, len(pending)))
    workers: list[WorkerProcess] = []
    semaphore = asyncio.Semaphore(options.concurrency or 1)
    carried = asdict(options)  # a private pipe on this machine: an inline judge key may travel

    async def one(key: int, item: QueueItem) -> None:
        async with semaphore:
            worker = min(workers, key=lambda w: len(w.in_flight))
            metrics = await worker.deliver(key, item, carried)
        run.accept(item, metrics, Path(run.session_dir) / item.dir_name)

    try:
        workers.extend(await asyncio.gather(*(WorkerProcess.start(run) for _ in range(count))))
        forks = sum(isinstance(w.proc, forked.ForkedProcess) for w in workers)
        how = ("forked from this process" if forks == count else
               "started as new interpreters" if not forks else f"{forks} of them forked from this process")
        run.log.write(f"Running on {count} worker process(es): pids "
                      f"{', '.join(str(w.proc.pid) for w in workers)} ({how})")
        await run_all([one(key, item) for key, item in enumerate(pending)])
    finally:
        await asyncio.shield(asyncio.gather(*(worker.stop() for worker in workers), return_exceptions=True))
