"""Real local services for tests: redis-server and a throw-away PostgreSQL cluster (initdb +
pg_ctl), each on a free loopback port, stoppable and restartable for fault tests, plus Celery
worker processes. Missing binaries skip a test, except under CI=true where they fail it
(``tests.browser.require``). Every process is bounded by timeouts and killed in ``finally``."""
from __future__ import annotations

import glob
import itertools
import os
import pwd
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import warm_python
from tests.browser import require

REPO = Path(__file__).resolve().parent.parent
_WORKER_SETS = itertools.count(1)


_PORT_BLOCK = 400
_PORT_BASE = 20000  # below Linux's ephemeral range (32768-60999), which servers on port 0 draw from


def _port_block() -> range:
    """This test process's own ports: one block per pytest-xdist worker, so two workers never
    hand out the same port, and none that a server binding port 0 could take meanwhile."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(worker[2:]) + 1 if worker[2:].isdigit() else 0
    start = _PORT_BASE + (index % 30) * _PORT_BLOCK
    return range(start, start + _PORT_BLOCK)


# A random start, so two test sessions on one machine (two engineers) rarely walk the same ports.
_PORT_TURNS = itertools.count(random.randrange(_PORT_BLOCK))


def free_port() -> int:
    """A loopback port nobody listens on, never handed out twice by this process (a server to
    start on it, or a URL that must refuse connections)."""
    block = _port_block()
    for _ in range(len(block)):
        port = block[next(_PORT_TURNS) % len(block)]
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port in {block}")


def wait_for_port(port: int, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def stop_process(proc: subprocess.Popen | None, *, grace: float = 5, group: bool = False) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds (the whole process group with ``group``)."""
    if proc is None or proc.poll() is not None:
        return
    send = (lambda sig: os.killpg(proc.pid, sig)) if group else proc.send_signal
    try:
        send(signal.SIGTERM)
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass


class RedisServer:
    """One redis-server on a loopback port; ``persistent`` keeps data across a restart (AOF), as
    a production broker would."""

    def __init__(self, root: Path, *, persistent: bool = False) -> None:
        binary = shutil.which("redis-server")
        require(binary is not None, "redis-server is not installed (scripts/setup.sh installs it)")
        self.binary = binary
        self.root = root
        self.port = free_port()
        self.persistent = persistent
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        persistence = (["--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.root)]
                       if self.persistent else ["--appendonly", "no"])
        with open(self.root / "redis.log", "a") as log:
            self.proc = subprocess.Popen(
                [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", *persistence],
                stdout=log, stderr=subprocess.STDOUT)
        # Our redis must be the one listening (one that found the port taken has exited).
        if not wait_for_port(self.port) or self.proc.poll() is not None:
            self.stop()
            pytest.fail(f"redis-server did not start:\n{(self.root / 'redis.log').read_text()[-2000:]}")
        return self

    def stop(self) -> None:
        stop_process(self.proc)


def _pg_bin() -> Path | None:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(candidates[-1]).parent if candidates else None


def _as_postgres(args: list[str]) -> list[str]:
    # initdb and postgres refuse to run as root; Debian's package creates the postgres user.
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


class PostgresCluster:
    """A throw-away cluster (trust auth, user ``evasite``) that can be stopped and started again."""

    def __init__(self) -> None:
        bin_dir = _pg_bin()
        require(bin_dir is not None, "PostgreSQL server binaries are not installed (scripts/setup.sh installs them)")
        owner = None
        if os.geteuid() == 0:
            require(shutil.which("runuser") is not None, "runuser is needed to run PostgreSQL as root")
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                require(False, "no postgres system user to run the server as")
        self.bin = bin_dir
        self.port = free_port()
        self.base = Path(tempfile.mkdtemp(prefix="evasite-pg-"))
        if owner is not None:
            os.chown(self.base, owner.pw_uid, owner.pw_gid)
        self.data = self.base / "data"
        # --no-sync and fsync=off: a throw-away cluster has nothing to keep through a power cut, and a
        # flush of the whole disk's dirty pages stalled initdb for minutes on a busy machine.
        subprocess.run(_as_postgres([str(self.bin / "initdb"), "--no-sync", "-D", str(self.data), "-A", "trust",
                                     "-U", "evasite"]),
                       check=True, capture_output=True, timeout=120)

    def _ctl(self, *args: str) -> list[str]:
        return _as_postgres([str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.base / "server.log"),
                             "-w", "-o", f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 -c fsync=off "
                             "-c synchronous_commit=off -c full_page_writes=off", *args])

    def start(self) -> "PostgresCluster":
        subprocess.run(self._ctl("start"), check=True, capture_output=True, timeout=120)
        return self

    def stop(self) -> None:
        subprocess.run(self._ctl("stop", "-m", "fast"), capture_output=True, timeout=60)

    def create_database(self, name: str = "evasite") -> str:
        subprocess.run(_as_postgres([str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                                     "-U", "evasite", name]), check=True, capture_output=True, timeout=60)
        return f"postgres://evasite@127.0.0.1:{self.port}/{name}"

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)


class CeleryWorkers:
    """``celery -A evasite worker`` processes on one queue (the scenarios' by default), each its own process group
    (so ``kill(index)`` takes a worker with its pool children, like a machine going away)."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = env
        self.procs: list[subprocess.Popen] = []
        self.prefix = f"set{next(_WORKER_SETS)}-"  # each set logs to its own files

    def log_path(self, index: int) -> Path:
        return self.root / f"{self.prefix}worker{index}.log"

    def start(self, count: int = 1, *, concurrency: int = 1, queue: str = "evasite-scenarios") -> "CeleryWorkers":
        for _ in range(count):
            index = len(self.procs)
            with open(self.log_path(index), "a") as log:
                self.procs.append(warm_python.Popen(
                    [sys.executable, "-m", "celery", "-A", "evasite", "worker", "-Q", queue,
                     "--concurrency", str(concurrency), "--prefetch-multiplier", "1", "--loglevel", "INFO",
                     "--hostname", f"{self.prefix}w{index}-{os.getpid()}@%h", "--without-gossip", "--without-mingle"],
                    cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        return self

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        for index, proc in enumerate(self.procs):
            log = self.log_path(index)
            while " ready." not in log.read_text(errors="replace"):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"worker {index} did not start:\n{log.read_text(errors='replace')[-3000:]}")
                time.sleep(0.2)

    def log(self, index: int) -> str:
        return self.log_path(index).read_text(errors="replace")

    def kill(self, index: int) -> None:
        """kill -9 of the worker and its pool children."""
        try:
            os.killpg(self.procs[index].pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.procs[index].wait(timeout=10)

    def stop(self) -> None:
        for proc in self.procs:
            stop_process(proc, grace=10, group=True)


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    server = RedisServer(tmp_path).start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def database_url() -> Iterator[str]:
    cluster = PostgresCluster().start()
    try:
        yield cluster.create_database()
    finally:
        cluster.remove()


class CeleryStack:
    """Broker, database and shared output of the celery executor on one machine: a persistent
    redis-server, a PostgreSQL database (migrated), an output directory, and the environment
    that points ``run_eval`` and workers at them."""

    def __init__(self, root: Path, **settings: str) -> None:
        self.root = root
        self.output_dir = root / "eval_results"
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self.redis = RedisServer(root, persistent=True)
        self.postgres = PostgresCluster()
        self.settings = settings
        self.env: dict[str, str] = {}

    def start(self) -> "CeleryStack":
        self.redis.start()
        self.postgres.start()
        self.env = {**os.environ, "DATABASE_URL": self.postgres.create_database(), "REDIS_URL": self.redis.url,
                    "EVASITE_PIPECAT_LOG_LEVEL": "WARNING", "PYTHONUNBUFFERED": "1", **self.settings}
        self.manage("migrate", "-v", "0")
        return self

    def stop(self) -> None:
        self.redis.stop()
        self.postgres.remove()

    def manage(self, *args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess:
        return warm_python.run([sys.executable, "manage.py", *args], cwd=REPO, env=self.env, check=check,
                               capture_output=True, text=True, timeout=timeout)

    def run_eval(self, *args: str, log_name: str = "run_eval.log", **extra_env: str) -> subprocess.Popen:
        """A ``run_eval`` writing into the stack's output directory (stdout and stderr to a log)."""
        with open(self.root / log_name, "a") as log:
            return warm_python.Popen([sys.executable, "manage.py", "run_eval", "--output-dir", str(self.output_dir),
                                     *args], cwd=REPO, env={**self.env, **extra_env}, stdout=log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def python(self, code: str, timeout: float = 120) -> str:
        """Django code against the stack's database; returns its stdout."""
        prelude = "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'evasite.settings'); django.setup()\n"
        done = warm_python.run([sys.executable, "-c", prelude + code], cwd=REPO, env=self.env, check=True,
                               capture_output=True, text=True, timeout=timeout)
        return done.stdout

    def workers(self) -> CeleryWorkers:
        return CeleryWorkers(self.root, self.env)

    def session_dirs(self) -> list[Path]:
        return sorted(self.output_dir.glob("eval_*"))
