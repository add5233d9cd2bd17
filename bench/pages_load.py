"""Benchmark: the site's pages under load, from one daphne and from several server processes.

It builds a throw-away site in a temporary directory (its own SQLite database, secret key and
session directories; the fixtures are read from EVAL_DATA_ROOT as usual, never copied): three
recorded text runs of the built-in models (``run_eval --modality text``: the ``listening`` agent
and the ``null`` agent on the same 10 scenarios, ``gold-replay`` on 5 scenarios x 2 trials) and a
user to log in as. First it counts the SQL queries each of the 18 pages runs and times its render
in-process, one request at a time (Django's test client): a page that runs a query per row or
recomputes something heavy costs more than any server setting buys back.

Then, for each setup, it starts the real server as a subprocess on a free loopback port, logs in
``--users`` clients over real HTTP (session cookie and CSRF token, as a browser does; each keeps
its connection alive), warms every process up, and has the clients fetch ``--requests`` pages
back to back (a closed loop: a client asks for the next page as soon as it has read the last),
spread evenly over the 18 pages (runs list, run pages and a live-panels fetch, result pages,
compare pages, the catalogue and scenario pages). It prints requests/s, p50, p95 and max
latency, errors (anything but a 200, a timeout or a dropped connection), the server's CPU
milliseconds per request, the busiest process's share of that CPU (50% with two evenly loaded
workers), the cores the clients and everything else on the machine kept busy meanwhile (other
people's jobs take cores from the server), and whether a run page's WebSocket
(``ws/runs/<id>/``) still answers with its snapshot on that setup.

  daphne:     ``daphne evasite.asgi:application``, one process (the README's command).
  one-worker: ``scripts/serve.sh --workers 1``: uvicorn in one process, to tell the server from
              the process count.
  workers:    ``scripts/serve.sh``, uvicorn with ``--workers N`` (default: the machine's cores),
              every process serving pages and WebSockets on one port.

Run: nice -n 19 .venv/bin/python bench/pages_load.py [--users 20] [--requests 600] [--workers N]
     [--setups daphne one-worker workers] [--keep DIR]
About 2 minutes on the 2-core development machine (30 s of it building the runs).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.services import free_port, stop_process, wait_for_port  # noqa: E402 (the tests' own helpers)

VENV_BIN = Path(sys.executable).parent
SCENARIOS = [f"eva_airline__{n}" for n in ("1_1_3", "1_1_4", "1_2_1", "1_3_2", "2_1_2", "2_2_2", "3_1_5",
                                           "4_1_1", "5_1_2", "6_1_1")]
USERNAME = "bench-reader"
# The recorded runs: (label, run_eval flags); each also gets --modality text and --output-dir.
RUNS = [
    ("listening", ["--scenarios", *SCENARIOS, "--concurrency", "4"]),
    ("null", ["--scenarios", *SCENARIOS, "--agent-model", "null", "--concurrency", "4"]),
    ("gold-replay x2", ["--scenarios", *SCENARIOS[:5], "--agent-model", "gold-replay", "--trials", "2",
                        "--concurrency", "4"]),
]
_CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@dataclass
class Site:
    """The throw-away site: its directory, the environment every process of it runs with, and
    the user's password."""

    root: Path
    env: dict[str, str]
    password: str

    def manage(self, *args: str, timeout: float = 600) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        if done.returncode != 0:
            raise SystemExit(f"manage.py {' '.join(args[:2])} failed:\n{(done.stdout + done.stderr)[-3000:]}")
        return done.stdout

    def python(self, code: str, timeout: float = 300) -> str:
        """Django code against the site's database; returns its stdout."""
        prelude = ("import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'evasite.settings'); "
                   "django.setup()\n")
        done = subprocess.run([sys.executable, "-c", prelude + code], cwd=REPO, env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        if done.returncode != 0:
            raise SystemExit(f"site code failed:\n{done.stderr[-3000:]}")
        return done.stdout


def build_site(root: Path) -> Site:
    """Migrate a fresh database, mirror the catalogue, record the runs and add the user; or
    open the site a ``--keep`` run built there before."""
    built = root / "site.json"
    recorded = json.loads(built.read_text()) if built.is_file() else {}
    env = {**os.environ, "EVASITE_SQLITE_PATH": str(root / "db.sqlite3"),
           "DJANGO_SECRET_KEY": recorded.get("secret_key") or secrets.token_urlsafe(50),
           "EVASITE_OUTPUT_DIR": str(root / "eval_results"), "EVASITE_PIPECAT_LOG_LEVEL": "WARNING",
           "EVASITE_LOG_LEVEL": "WARNING", "PYTHONUNBUFFERED": "1"}
    for name in ("DATABASE_URL", "REDIS_URL", "EVASITE_DEBUG", "EVASITE_PUBLIC_RESULTS", "EVASITE_HTTPS"):
        env.pop(name, None)  # this site is SQLite, in-memory layer, login required, plain HTTP
    site = Site(root, env, recorded.get("password") or secrets.token_urlsafe(16))
    site.manage("migrate", "-v", "0")  # also brings a kept site's database up to this checkout
    if recorded:
        print("  reusing the site built there before", flush=True)
        return site
    site.manage("load_scenarios")
    for label, flags in RUNS:
        started = time.perf_counter()
        site.manage("run_eval", "--modality", "text", "--output-dir", str(root / "eval_results"), *flags)
        print(f"  recorded run: {label:<16} {time.perf_counter() - started:5.1f} s", flush=True)
    site.python("from django.contrib.auth import get_user_model\n"
                f"get_user_model().objects.create_user({USERNAME!r}, password={site.password!r})\n")
    built.write_text(json.dumps({"secret_key": env["DJANGO_SECRET_KEY"], "password": site.password}))
    built.chmod(0o600)
    return site


def site_pages(site: Site) -> list[str]:
    """The 18 pages the clients read, from the recorded rows."""
    rows = json.loads(site.python(
        "import json\nfrom scoring.models import Run\n"
        "runs = []\n"
        "for run in Run.objects.order_by('pk'):\n"
        "    results = list(run.results.order_by('position', 'trial', 'pk').values_list('pk', flat=True))\n"
        "    runs.append({'id': run.pk, 'results': results})\n"
        "print(json.dumps(runs))\n"))
    if len(rows) != len(RUNS):
        raise SystemExit(f"expected {len(RUNS)} recorded runs, found {len(rows)}")
    listening, null, gold = rows
    compare = f"/runs/compare/?a={listening['id']}&b={null['id']}"
    return [
        "/", "/?modality=text", "/scenarios/",
        f"/runs/{listening['id']}/", f"/runs/{null['id']}/", f"/runs/{gold['id']}/", f"/runs/{null['id']}/panels/",
        f"/results/{listening['results'][0]}/", f"/results/{listening['results'][3]}/",
        f"/results/{null['results'][0]}/", f"/results/{null['results'][4]}/", f"/results/{gold['results'][1]}/",
        compare, f"{compare}&flips=1", f"{compare}&scenario={SCENARIOS[0]}",
        *(f"/scenarios/{name}/" for name in SCENARIOS[:3]),
    ]


def page_costs(site: Site, pages: list[str]) -> list[tuple[str, int, float]]:
    """``(page, SQL queries, median in-process ms)`` per page, one request at a time."""
    code = (
        "import json, statistics, time\n"
        "from django.contrib.auth import get_user_model\n"
        "from django.db import connection\n"
        "from django.test import Client\n"
        "client = Client()\n"
        f"client.force_login(get_user_model().objects.get(username={USERNAME!r}))\n"
        "out = []\n"
        f"for page in {pages!r}:\n"
        "    client.get(page)\n"
        "    queries = []\n"
        "    def count(execute, sql, params, many, context):\n"
        "        queries.append(sql)\n"
        "        return execute(sql, params, many, context)\n"
        "    with connection.execute_wrapper(count):\n"
        "        status = client.get(page).status_code\n"
        "    assert status == 200, (page, status)\n"
        "    times = []\n"
        "    for _ in range(5):\n"
        "        started = time.perf_counter(); client.get(page); times.append(time.perf_counter() - started)\n"
        "    out.append((page, len(queries), statistics.median(times) * 1000))\n"
        "print(json.dumps(out))\n")
    return [tuple(row) for row in json.loads(site.python(code))]


# --- the servers ---------------------------------------------------------------------------------


@dataclass
class Setup:
    """A server command line (``{port}`` filled in at start) and how many processes serve."""

    name: str
    processes: int
    argv: list[str]


def serve_sh(workers: int) -> list[str]:
    return ["bash", str(REPO / "scripts" / "serve.sh"), "--host", "127.0.0.1", "--port", "{port}",
            "--workers", str(workers)]


def setups(names: list[str], workers: int) -> Iterator[Setup]:
    for name in names:
        if name == "daphne":
            yield Setup("one daphne", 1, [str(VENV_BIN / "daphne"), "-b", "127.0.0.1", "-p", "{port}",
                                          "evasite.asgi:application"])
        elif name == "one-worker":
            yield Setup("scripts/serve.sh, 1 worker", 1, serve_sh(1))
        elif name == "workers":
            yield Setup(f"scripts/serve.sh, {workers} workers", workers, serve_sh(workers))


class Server:
    """One setup's server process group on a free port, its log in the site's directory."""

    def __init__(self, site: Site, setup: Setup) -> None:
        self.site, self.setup = site, setup
        self.port = free_port()
        self.log_path = site.root / f"server-{self.port}.log"
        self.proc: subprocess.Popen | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "Server":
        argv = [part.replace("{port}", str(self.port)) for part in self.setup.argv]
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(argv, cwd=REPO, env=self.site.env, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        if not wait_for_port(self.port, timeout=60) or self.proc.poll() is not None:
            self.stop()
            raise SystemExit(f"{self.setup.name} did not start:\n{self.log_path.read_text()[-3000:]}")
        return self

    def stop(self) -> None:
        stop_process(self.proc, grace=10, group=True)

    def cpu_seconds(self) -> dict[int, float]:
        """User + system CPU seconds of the server process and of each of its descendants (the
        workers), by pid."""
        assert self.proc is not None
        parents: dict[int, int] = {}
        ticks: dict[int, int] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # the process ended meanwhile
            pid = int(stat.parent.name)
            parents[pid] = int(fields[1])
            ticks[pid] = int(fields[11]) + int(fields[12])
        tree, grew = {self.proc.pid}, True
        while grew:
            grew = False
            for pid, parent in parents.items():
                if parent in tree and pid not in tree:
                    tree.add(pid)
                    grew = True
        return {pid: ticks.get(pid, 0) / os.sysconf("SC_CLK_TCK") for pid in tree}


# --- the clients ---------------------------------------------------------------------------------


@dataclass
class Load:
    latencies_ms: list[float] = field(default_factory=list)
    per_page_ms: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    wall_s: float = 0.0


async def log_in(base: str, password: str) -> aiohttp.ClientSession:
    """A client with its own cookie jar and one kept-alive connection, logged in through the form."""
    session = aiohttp.ClientSession(
        base_url=base, cookie_jar=aiohttp.CookieJar(unsafe=True),  # unsafe: cookies from an IP address
        connector=aiohttp.TCPConnector(limit=1), timeout=aiohttp.ClientTimeout(total=60))
    async with session.get("/accounts/login/") as response:
        token = _CSRF_FIELD.search(await response.text())
    if token is None:
        await session.close()
        raise SystemExit("the login page has no CSRF token")
    form = {"username": USERNAME, "password": password, "csrfmiddlewaretoken": token.group(1), "next": "/"}
    async with session.post("/accounts/login/", data=form, allow_redirects=False) as response:
        if response.status != 302 or response.headers.get("Location") != "/":
            await session.close()
            raise SystemExit(f"login failed: HTTP {response.status}")
    return session


async def fetch(session: aiohttp.ClientSession, page: str) -> str | None:
    """Read one page whole; the error in words, or None for a 200."""
    try:
        async with session.get(page, allow_redirects=False) as response:
            await response.read()
            return None if response.status == 200 else f"HTTP {response.status} {page}"
    except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
        return f"{type(exc).__name__} {page}"


async def drive(sessions: list[aiohttp.ClientSession], schedule: list[str]) -> Load:
    """Every client takes the next page of ``schedule`` as soon as it has read its last one."""
    load = Load()
    queue = iter(schedule)

    async def client(session: aiohttp.ClientSession) -> None:
        for page in queue:
            started = time.perf_counter()
            error = await fetch(session, page)
            elapsed = (time.perf_counter() - started) * 1000
            load.latencies_ms.append(elapsed)
            load.per_page_ms.setdefault(page, []).append(elapsed)
            if error:
                load.errors.append(error)

    started = time.perf_counter()
    await asyncio.gather(*(client(session) for session in sessions))
    load.wall_s = time.perf_counter() - started
    return load


async def websocket_answers(session: aiohttp.ClientSession, base: str, run_id: int) -> str:
    """Whether ``ws/runs/<id>/`` accepts the logged-in client and sends its snapshot."""
    try:
        async with session.ws_connect(f"/ws/runs/{run_id}/", headers={"Origin": base}) as socket:
            message = await socket.receive_json(timeout=10)
            return "snapshot received" if message.get("type") == "snapshot" else f"unexpected {message!r:.80}"
    except (aiohttp.ClientError, asyncio.TimeoutError, TypeError, ValueError) as exc:
        return f"failed: {type(exc).__name__} {exc}"


def machine_busy_seconds() -> float:
    """CPU seconds every core of this machine has spent busy since boot (``/proc/stat``)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


@dataclass
class Measured:
    load: Load
    cpu_ms_per_request: float
    busiest_share: float  # the busiest process's part of the server's CPU during the load
    client_cores: float  # this script's clients, in cores busy during the load
    other_cores: float  # everything else on the machine (other people's jobs), in cores
    websocket: str


async def measure(server: Server, pages: list[str], users: int, requests: int, run_id: int) -> Measured:
    """Log the users in, warm every process up, then the timed load; the server's CPU during it
    and the WebSocket check."""
    sessions = [await log_in(server.base, server.site.password) for _ in range(users)]
    try:
        # Warm-up, not timed: each process compiles its templates and fills its caches on first
        # use, and the kernel hands connections to processes unevenly, so every page several times.
        await drive(sessions, pages * max(2, server.setup.processes))
        before, machine, client = server.cpu_seconds(), machine_busy_seconds(), time.process_time()
        load = await drive(sessions, [pages[i % len(pages)] for i in range(requests)])
        after = server.cpu_seconds()
        machine, client = machine_busy_seconds() - machine, time.process_time() - client
        spent = [seconds - before.get(pid, 0.0) for pid, seconds in after.items()]
        return Measured(load, sum(spent) * 1000 / requests, max(spent) / max(sum(spent), 1e-9),
                        client / load.wall_s, max(0.0, machine - sum(spent) - client) / load.wall_s,
                        await websocket_answers(sessions[0], server.base, run_id))
    finally:
        for session in sessions:
            await session.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=20, help="logged-in clients reading at once")
    parser.add_argument("--requests", type=int, default=600, help="timed requests, spread over the 18 pages")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="processes of the workers setup")
    parser.add_argument("--setups", nargs="+", choices=("daphne", "one-worker", "workers"),
                        default=["daphne", "one-worker", "workers"])
    parser.add_argument("--keep", type=Path, help="build the site in this directory and keep it (logs, database); "
                                                  "a later run with the same directory reuses it")
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    root = Path(args.keep or tempfile.mkdtemp(prefix="evasite-pages-"))
    try:
        print(f"Building the site in {root} ({os.cpu_count()} CPUs):", flush=True)
        site = build_site(root)
        pages = site_pages(site)
        run_id = int(re.search(r"/runs/(\d+)/", pages[3]).group(1))
        print(f"\n{'page':<58} {'queries':>7} {'ms':>6}  (in-process, one request at a time)")
        for page, queries, render_ms in page_costs(site, pages):
            print(f"{page:<58} {queries:>7} {render_ms:>6.1f}", flush=True)
        print(f"\n{args.users} logged-in users, {args.requests} requests over {len(pages)} pages, closed loop:")
        print(f"{'setup':<32} {'procs':>5} {'req/s':>7} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} {'errors':>6} "
              f"{'CPU ms/req':>10} {'busiest':>7} {'client':>6} {'others':>6}  WebSocket")
        for setup in setups(args.setups, args.workers):
            server = Server(site, setup).start()
            try:
                measured = asyncio.run(measure(server, pages, args.users, args.requests, run_id))
            finally:
                server.stop()
            load, lat = measured.load, measured.load.latencies_ms
            print(f"{setup.name:<32} {setup.processes:>5} {len(lat) / load.wall_s:>7.1f} "
                  f"{statistics.median(lat):>7.0f} {percentile(lat, 0.95):>7.0f} {max(lat):>7.0f} "
                  f"{len(load.errors):>6} {measured.cpu_ms_per_request:>10.1f} {100 * measured.busiest_share:>6.0f}% "
                  f"{measured.client_cores:>6.2f} {measured.other_cores:>6.2f}  {measured.websocket}", flush=True)
            for error in sorted(set(load.errors))[:5]:
                print(f"    error: {error}")
            slowest = sorted(load.per_page_ms.items(), key=lambda item: -statistics.median(item[1]))[:3]
            print("    slowest pages (p50 ms): " + ", ".join(f"{page} {statistics.median(ms):.0f}"
                                                          for page, ms in slowest), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
