"""The suite's Python subprocesses, forked from a warm interpreter instead of started cold.

Why: a ``manage.py`` process spends about 1.5 of its 1.9 CPU seconds importing pipecat, aiohttp,
numpy, celery and Django before it reads its first flag, and the suite starts some 150 of them
(``run_eval``, ``python -c`` probes, daphne, Celery workers). Each test process keeps one
``multiprocessing`` fork server that has imported those third-party packages once; a command is a
child forked from it, so it is still a process of its own (its own pid, environment, working
directory, files, exit code and signals) running the project's real entry point, and the project's
own modules and settings are imported fresh in the child from the environment it is given.

``run`` and ``Popen`` take the arguments of their ``subprocess`` namesakes. A command that is not
``[sys.executable, script | -c code | -m module, ...]``, or asks for what a fork cannot give
(standard input, a pipe read while it runs), is started the ordinary way.
"""
from __future__ import annotations

import atexit
import io
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Any, Optional

# Imported by the fork server once: third-party packages whose import does not read the project's
# settings (never evasite, scoring, voice or scenarios, nor daphne, which installs its reactor).
PRELOAD = [
    "numpy", "aiohttp", "pydantic", "loguru", "yaml", "redis", "kombu", "celery",
    "pipecat.frames.frames", "pipecat.pipeline.pipeline", "pipecat.pipeline.worker", "pipecat.workers.runner",
    "pipecat.processors.aggregators.llm_response_universal", "pipecat.services.llm_service",
    "django.core.management", "django.db.models", "django.http", "django.urls", "django.test",
]

_lock = threading.Lock()
_context: Optional[multiprocessing.context.BaseContext] = None


def _fork_server() -> multiprocessing.context.BaseContext:
    global _context
    with _lock:
        if _context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(PRELOAD)
            _context = context
        return _context


def _supported(args: Any, kwargs: dict) -> bool:
    if not isinstance(args, (list, tuple)) or len(args) < 2 or args[0] != sys.executable:
        return False
    if args[1] in ("-c", "-m"):
        if len(args) < 3:
            return False
    elif args[1].startswith("-"):  # an interpreter option a fork cannot take
        return False
    if kwargs.get("stdin") not in (None, subprocess.DEVNULL) or kwargs.get("input") is not None:
        return False
    return set(kwargs) <= {"cwd", "env", "stdout", "stderr", "start_new_session", "text", "capture_output",
                           "timeout", "check", "encoding", "errors"}


def _target(stream: Any, spool: Path) -> Optional[str]:
    """Where a child's stream goes, as a path it opens itself (a fork server child cannot be
    handed this process's file objects): None inherits, a PIPE is a spool file read at the end."""
    if stream is None:
        return None
    if stream == subprocess.DEVNULL:
        return os.devnull
    if stream == subprocess.PIPE:
        return str(spool)
    if stream == subprocess.STDOUT:
        return "stdout"
    name = getattr(stream, "name", None)
    if isinstance(name, str) and os.path.exists(name):
        return name
    raise ValueError(f"a warm child cannot write to {stream!r}")


def _open_stream(fd: int, target: Optional[str], unbuffered: bool, line: bool) -> None:
    if target is None:
        return
    if target == "stdout":
        os.dup2(1, fd)
    else:
        opened = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    raw = io.FileIO(fd, "w", closefd=False)
    wrapped = io.TextIOWrapper(io.BufferedWriter(raw) if not unbuffered else raw, encoding="utf-8",
                               errors="backslashreplace", line_buffering=line, write_through=unbuffered)
    if fd == 1:
        sys.stdout = sys.__stdout__ = wrapped
    else:
        sys.stderr = sys.__stderr__ = wrapped


def _child(args: list[str], env: dict[str, str], cwd: str, stdout: Optional[str], stderr: Optional[str],
           new_session: bool) -> None:
    """The child's whole life, as ``python args...`` would live it; never returns."""
    atexit._clear()  # the fork server's handlers are not this program's
    if new_session:
        os.setsid()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    unbuffered = bool(env.get("PYTHONUNBUFFERED"))
    _open_stream(1, stdout, unbuffered, line=False)
    _open_stream(2, stderr, unbuffered, line=True)
    code = 0
    try:
        if args[0] == "-c":
            sys.argv = ["-c", *args[2:]]
            sys.path[0] = ""
            exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        elif args[0] == "-m":
            import runpy
            sys.argv = [args[1], *args[2:]]
            sys.path[0] = cwd
            runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        else:
            import runpy
            script = os.path.join(cwd, args[0])
            sys.argv = list(args)
            sys.path[0] = os.path.dirname(os.path.abspath(script))
            runpy.run_path(script, run_name="__main__")
    except SystemExit as stop:
        if stop.code is None:
            code = 0
        elif isinstance(stop.code, int):
            code = stop.code
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:  # as CPython: the traceback, then death by the signal itself
        traceback.print_exc()
        code = -signal.SIGINT
    except BaseException:  # noqa: BLE001 - the interpreter's own last word
        traceback.print_exc()
        code = 1
    try:
        threading._shutdown()  # type: ignore[attr-defined]  # non-daemon threads, as at a real exit
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        if code < 0:
            signal.signal(-code, signal.SIG_DFL)
            os.kill(os.getpid(), -code)
        os._exit(code & 0xFF)


class WarmProcess:
    """The part of ``subprocess.Popen`` the suite uses, for a child of the fork server."""

    def __init__(self, args: list[str], *, cwd: Any = None, env: Optional[dict] = None, stdout: Any = None,
                 stderr: Any = None, start_new_session: bool = False, text: bool = False,
                 encoding: Optional[str] = None, errors: Optional[str] = None, **_: Any) -> None:
        self.args = args
        self.returncode: Optional[int] = None
        self._text = bool(text or encoding or errors)
        self._captured = (stdout == subprocess.PIPE, stderr == subprocess.PIPE)
        # Captured output is spooled to files read at the end; nothing else needs a folder.
        self._spool = Path(tempfile.mkdtemp(prefix="evasite-warm-")) if any(self._captured) else None
        self._out = self._spool / "stdout" if self._spool else Path(os.devnull)
        self._err = self._spool / "stderr" if self._spool else Path(os.devnull)
        for path, captured in ((self._out, self._captured[0]), (self._err, self._captured[1])):
            if captured:
                path.touch(mode=0o600)
        self._process = _fork_server().Process(
            target=_child,
            args=(list(args[1:]), dict(os.environ if env is None else env), str(cwd or os.getcwd()),
                  _target(stdout, self._out), _target(stderr, self._err), start_new_session),
            daemon=True)  # a child left running never holds this test process's exit: it gets SIGTERM
        self._process.start()
        self.pid: int = self._process.pid  # type: ignore[assignment]
        self.stdout = None
        self.stderr = None

    def poll(self) -> Optional[int]:
        if self.returncode is None and not self._process.is_alive():
            self._process.join()
            self.returncode = self._process.exitcode
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        self._process.join(timeout)
        if self.poll() is None:
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _read(self, path: Path, captured: bool) -> Any:
        if not captured:
            return None
        data = path.read_bytes()
        return data.decode("utf-8", errors="replace") if self._text else data

    def communicate(self, timeout: Optional[float] = None) -> tuple[Any, Any]:
        self.wait(timeout)  # a timeout leaves the spool for the call after the kill
        try:
            return self._read(self._out, self._captured[0]), self._read(self._err, self._captured[1])
        finally:
            if self._spool is not None:
                shutil.rmtree(self._spool, ignore_errors=True)

    def __enter__(self) -> "WarmProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.poll() is None:
            self.wait()


def Popen(args: Any, **kwargs: Any) -> Any:  # noqa: N802 - the name of what it stands in for
    if not _supported(args, kwargs) or kwargs.get("stdout") == subprocess.PIPE or kwargs.get("stderr") == subprocess.PIPE:
        return subprocess.Popen(args, **kwargs)
    return WarmProcess(list(args), **kwargs)


def run(args: Any, *, timeout: Optional[float] = None, check: bool = False, capture_output: bool = False,
        **kwargs: Any) -> subprocess.CompletedProcess:
    if not _supported(args, kwargs):
        return subprocess.run(args, timeout=timeout, check=check, capture_output=capture_output, **kwargs)
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    process = WarmProcess(list(args), **kwargs)
    try:
        out, err = process.communicate(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate(10)
        raise
    done = subprocess.CompletedProcess(args, process.returncode, out, err)
    if check:
        done.check_returncode()
    return done


