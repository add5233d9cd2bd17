"""Worker processes forked by ``run_eval`` before its event loop starts (``--processes N``).

Why: a worker started as a new interpreter spends about 2 s importing Django, pipecat and the
project before its first attempt, longer than its share of a 50-scenario text run. A fork of the
``run_eval`` process, taken while that process still has one thread, no event loop and no open
database connection, starts with all of it imported. Forked only when that holds: otherwise (the
web server, a Celery coordinator, a test process with threads) the coordinator starts
interpreters as before. The child runs ``process_worker.serve`` on its own pair of pipes, in a
session of its own so that Ctrl-C reaches only the coordinator.
"""
from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import traceback
from dataclasses import dataclass

_spares: list["ForkedChild"] = []


@dataclass
class ForkedChild:
    """A forked worker waiting to be adopted: its pid and the coordinator's ends of its pipes."""

    pid: int
    commands_fd: int
    events_fd: int


def can_fork() -> bool:
    """Whether a fork taken now is safe: one thread (no lock another thread may hold) and a way to
    wait for the child on the event loop (Linux pidfds)."""
    return hasattr(os, "fork") and hasattr(os, "pidfd_open") and threading.active_count() == 1


def prefork(count: int) -> int:
    """Fork up to ``count`` idle workers for the run about to start; how many were forked."""
    if count < 2 or not can_fork():
        return 0
    from django.db import connections

    connections.close_all()  # the children open their own
    sys.stdout.flush()
    sys.stderr.flush()
    coordinator = os.getpid()
    for _ in range(count):
        commands_read, commands_write = os.pipe()
        events_read, events_write = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # out of processes or memory: the coordinator starts the rest cold
            for fd in (commands_read, commands_write, events_read, events_write):
                os.close(fd)
            break
        if pid == 0:
            inherited = [fd for spare in _spares for fd in (spare.commands_fd, spare.events_fd)]
            _child(commands_read, events_write, parent=coordinator, close=[commands_write, events_read, *inherited])
        os.close(commands_read)
        os.close(events_write)
        _spares.append(ForkedChild(pid, commands_write, events_read))
    return len(_spares)


def adopt() -> ForkedChild | None:
    """A forked worker for the coordinator, if one is waiting."""
    return _spares.pop() if _spares else None


def release_spares() -> None:
    """End the workers nobody adopted (their input closes, they exit) and reap them."""
    while _spares:
        spare = _spares.pop()
        os.close(spare.commands_fd)
        os.close(spare.events_fd)
        try:
            os.waitpid(spare.pid, 0)
        except ChildProcessError:
            pass


def _child(commands_fd: int, events_fd: int, *, parent: int, close: list[int]) -> None:
    """The forked worker's whole life; it never returns to the caller's code."""
    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _die_with_parent(parent)
        for fd in close:  # other workers' pipes: each must see its input end when the coordinator closes it
            os.close(fd)
        from scoring.runs.executors.process_worker import serve

        asyncio.run(serve(events_fd, commands_fd))
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)  # never the coordinator's exit handlers


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill this worker when the coordinator dies, however it dies: a killed
    ``run_eval`` must not leave workers finishing attempts while ``--resume`` starts them again
    (the coordinator's own end stops its workers first). Linux's ``PR_SET_PDEATHSIG``."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(1, signal.SIGKILL, 0, 0, 0) != 0:  # 1: PR_SET_PDEATHSIG
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)


class ForkedProcess:
    """The part of an asyncio subprocess that ``WorkerProcess`` uses, for an adopted forked child."""

    def __init__(self, pid: int, stdin: asyncio.StreamWriter) -> None:
        self.pid, self.stdin = pid, stdin
        self.returncode: int | None = None
        loop = asyncio.get_running_loop()
        self._exited: asyncio.Future[int] = loop.create_future()
        self._pidfd = os.pidfd_open(pid)
        loop.add_reader(self._pidfd, self._reap)

    @classmethod
    async def connect(cls, child: ForkedChild) -> tuple["ForkedProcess", asyncio.StreamReader]:
        """Wrap an adopted child's pipes in the loop's streams."""
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(child.commands_fd, "wb", buffering=0))
        stdin = asyncio.StreamWriter(transport, protocol, None, loop)
        events = asyncio.StreamReader(limit=16 * 1024 * 1024)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(events),
                                     os.fdopen(child.events_fd, "rb"))
        return cls(child.pid, stdin), events

    def _reap(self) -> None:
        asyncio.get_running_loop().remove_reader(self._pidfd)
        os.close(self._pidfd)
        _, status = os.waitpid(self.pid, 0)
        self.returncode = os.waitstatus_to_exitcode(status)
        self._exited.set_result(self.returncode)

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    def kill(self) -> None:
        if self.returncode is not None:
            raise ProcessLookupError(self.pid)
        os.kill(self.pid, signal.SIGKILL)
