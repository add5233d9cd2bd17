"""The runner service (harness.md §3.1, §15–§17): select scenarios, run each through the bridge
with automatic retry, resume a killed run, aggregate, write the run files and the database rows.

``manage.py run_eval`` and the web UI both call ``run_evaluation``; nothing here prints.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings as django_settings

from scenarios.registry import (
    get_eval_scenario,
    list_eval_scenarios,
    scenarios_in_domain,
)
from scoring.core import resume as resume_rules
from scoring import services
from scoring.core.aggregate import SUCCESS, RunAggregator
from scoring.core.artifacts_text import format_latencies_csv
from scoring.runs.attempt import load_final_db
from scoring.core.canonical import db_hash
from scoring.runs.evallog import EvalLog
from scoring.runs import remote_cancel
from scoring.runs.executors.base import QueueItem, RunCancelled, RunContext, RunError, RunInterrupted
from scoring.runs.executors.choice import get_executor
from scoring.runs import liveness
from scoring.runs.executors.lease import RunLeases
from scoring.core.files import read_json, write_json, write_text_atomic
from scoring.core.judge import judge_enabled
from scoring.runs.live import ChannelsProgress, FanOut
from scoring.runs.preflight import PreflightError, check_run_endpoints
from scoring.runs.progress import NullProgress, ProgressSink
from scoring.runs.options import REDACTED, RunOptions, redact_urls_in
from scoring.runs.options.conditions import run_conditions
from scoring.runs.options.entry import resolve_defaults
from scoring.runs.options.limits import Limits
from scoring.runs.options.schema import RESUME_COMPARED_FIELDS
from scoring.core.summary import ProjectBlock, format_all_summary
from voice.bridge.endpoints import PeerEndpoint


@dataclass
class RunReport:
    session_dir: Path
    run_id: int | None
    metrics: list[dict[str, Any]]
    summary_text: str
    success_rate: float | None
    loaded: int = 0
    executed: int = 0
    elapsed_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)


def select_scenarios(options: RunOptions) -> list[str]:
    """§3.1 step 1: explicit names, else the domain prefix, else everything (registry order)."""
    registered = list_eval_scenarios()
    if not registered:
        raise RunError("No scenarios are registered (check the data root with `manage.py check`).")
    if options.scenarios:
        unknown = [name for name in options.scenarios if name not in registered]
        if unknown:
            raise RunError(f"Unknown scenario(s): {', '.join(unknown)} (see `manage.py run_eval --list`).")
        return list(options.scenarios)
    if options.domain:
        names = scenarios_in_domain(options.domain)
        if not names:
            raise RunError(f"No scenarios found for domain '{options.domain}'.")
        return names
    return registered


def _plan_queue(options: RunOptions) -> tuple[list[str], list[QueueItem]]:
    """The selected scenarios and the queue of their attempts (each trial its own item)."""
    names = select_scenarios(options)
    trials = range(1, options.trials + 1)
    conditions = [condition.name for condition in run_conditions(options.conditions)] or [""]
    attempts = ((name, condition, trial) for name in names for condition in conditions for trial in trials)
    queue = [QueueItem(i, name, trial, options.trials, condition) for i, (name, condition, trial) in enumerate(attempts)]
    return names, queue


def _session_dir(options: RunOptions) -> tuple[Path, str, bool]:
    # Absolute, so stored result directories stay valid whatever the web server's cwd is.
    output_dir = Path(options.output_dir).expanduser().resolve()
    if options.resume:
        session_dir = output_dir / f"eval_{options.resume}"
        if not session_dir.is_dir():
            raise RunError(f"Cannot resume: {session_dir} does not exist.")
        return session_dir, options.resume, True
    output_dir.mkdir(parents=True, exist_ok=True)
    while True:  # two runs started in the same second never share a directory
        stamp = resume_rules.timestamp(datetime.now())
        session_dir = output_dir / f"eval_{stamp}"
        try:
            session_dir.mkdir()
            break
        except FileExistsError:
            time.sleep(1.0)
    return session_dir, stamp, False


def _redacted_argv(argv: list[str], secret: str | None) -> list[str]:
    """The command line as recorded: an inline ``--judge-api-key`` value never reaches a file."""
    flag = "--judge-api-key"
    redacted: list[str] = []
    for index, arg in enumerate(argv):
        if index > 0 and argv[index - 1] == flag:
            arg = REDACTED
        elif arg.startswith(flag + "="):
            arg = f"{flag}={REDACTED}"
        elif secret and arg == secret:
            arg = REDACTED
        redacted.append(redact_urls_in(arg))
    return redacted


def _record_invocation(session_dir: Path, options: RunOptions, argv: list[str], names: list[str],
                       log: EvalLog) -> dict[str, Any] | None:
    """Append to ``run_args.json`` (§14.8); returns the previous record on resume."""
    path = session_dir / "run_args.json"
    invocations: list[dict[str, Any]] = []
    if path.exists():
        try:
            payload = read_json(path)
            if isinstance(payload, dict) and isinstance(payload.get("invocations"), list):
                invocations = payload["invocations"]
            elif isinstance(payload, dict):
                invocations = [payload]  # legacy single-object file
            else:
                raise ValueError("not an object")
        except (OSError, ValueError) as exc:
            log.warning(f"run_args.json unreadable ({exc}); starting a new invocation list")
    previous = invocations[-1] if invocations else None
    record: dict[str, Any] = {
        "started_at": datetime.now().isoformat(timespec="seconds"),
        "argv": _redacted_argv(argv, options.judge_api_key),
        "parsed_args": options.redacted(),
        "resolved_scenario_count": len(names),
        "resolved_scenario_names": names,
    }
    if options.modality == "voice":
        from voice.speech.description import speech_description

        record["speech"] = speech_description()  # which TTS/ASR, and the Whisper model's sha256
    conditions = run_conditions(options.conditions)
    if conditions:
        record["conditions"] = [condition.describe() for condition in conditions]
    if options.resume and invocations:
        record["resumed_from_invocation"] = len(invocations) - 1
    invocations.append(record)
    write_json(path, {"invocations": invocations})
    return previous


def null_agent_floor(names: list[str]) -> tuple[int, int]:
    """How many selected scenarios a do-nothing agent that hangs up cleanly would pass."""
    floor = 0
    for name in names:
        scenario = get_eval_scenario(name)
        expected = getattr(scenario, "expected_scenario_db", None)
        if expected and hasattr(scenario, "fresh_db") and db_hash(expected) == db_hash(scenario.fresh_db()):
            floor += 1
    return floor, len(names)


class _Run:
    """State of one invocation; a class only to keep the long procedure readable."""

    owner_id: int | None = None  # the site user who started it (web runs)
    on_open: Callable[[int], None] | None = None  # told the run's row id as soon as it exists
    user_endpoint: PeerEndpoint | None = None  # a human tester's live peer (scoring.runs.human_run)
    leases: RunLeases | None = None  # scenario leases, when other processes may run the run's scenarios
    cancelled_by: str = ""  # who cancelled the run from the site through another process

    def __init__(self, options: RunOptions, argv: list[str], progress: ProgressSink, source: str) -> None:
        self.options = options
        self.argv = argv
        self.progress = progress
        self.source = source
        self.results: dict[int, tuple[dict[str, Any], Path]] = {}
        self.run_id: int | None = None
        self.loaded = 0
        self.executed = 0
        self.loaded_items: list[QueueItem] = []

    async def execute(self) -> RunReport:
        started = time.monotonic()
        options = self.options
        try:  # one line naming an unreachable URL, before anything is written or run
            await check_run_endpoints(options)
        except PreflightError as exc:
            raise RunError(str(exc)) from None
        if options.executor is None:  # the one setting-backed default of the options
            options.executor = django_settings.EVASITE_EXECUTOR
        resolve_defaults(options, Limits.from_settings())  # options built without run_eval's prepare()
        # Off the event loop: a web run's selection and queue must not stall other requests.
        names, queue = await asyncio.to_thread(_plan_queue, options)
        self.executor = get_executor(options.executor)
        self.executor.preflight(options, names)
        session_dir, stamp, resuming = _session_dir(options)
        refusal = await sync_to_async(liveness.resume_refusal)(session_dir) if resuming else ""
        if refusal:
            raise RunError(refusal)  # before anything is written: the live coordinator owns the files
        self.session_dir = session_dir
        self.log = log = EvalLog(session_dir / "evaluation_log.txt", append=resuming)
        cancel_listener: asyncio.Task[None] | None = None
        heartbeat: asyncio.Task[None] | None = None
        try:
            if resuming:
                log.write(f"=== RESUMING run eval_{stamp} ===")
            log.write(f"Queued {len(queue)} scenario run(s): {', '.join(item.dir_name for item in queue)}")
            previous = _record_invocation(session_dir, options, self.argv, names, log)
            warnings = []
            if resuming and previous is not None:
                warning = resume_rules.format_resume_warning(
                    resume_rules.resume_mismatches(previous.get("parsed_args", {}), options.redacted(),
                                                   RESUME_COMPARED_FIELDS))
                if warning:
                    log.warning(warning)
                    warnings.append(warning)
            if not judge_enabled(options.judge_url, options.judge_model):
                self._warn_judge_signals(names)
            self.run_id = (await sync_to_async(services.run_open)(
                session_dir=session_dir, timestamp=stamp, parsed_args=options.redacted(),
                scenario_names=names, total_scenarios=len(queue), source=self.source,
                owner_id=self.owner_id)).pk
            lapse = django_settings.EVASITE_COORDINATOR_LAPSE
            heartbeat = asyncio.ensure_future(liveness.keep_alive(self.run_id, lapse))
            if self.on_open is not None:
                self.on_open(self.run_id)
            current = asyncio.current_task()
            assert current is not None
            cancel_listener = await remote_cancel.listen(self.run_id, current, self._cancelled_from_afar)
            self.leases = self.executor.leases(self.run_id, session_dir, resuming)
            self.live = ChannelsProgress(self.run_id)
            self.display = self.progress
            self.progress = FanOut(self.progress, self.live)
            pending = self._classify(queue, resuming)
            await self._record_loaded()
            self.progress.run_started(run_label=f"eval_{stamp}", total=len(queue), already_done=self.loaded)
            await self.live.flush()  # on the layer before a Celery worker can publish a scenario's events
            await self.executor.run_items(self._context(stamp), pending)
            report = await self._finish(queue, names, warnings)
            report.elapsed_seconds = time.monotonic() - started
            return report
        except BaseException as caught:
            if cancel_listener is not None:
                cancel_listener.cancel()  # it would cancel the recording of the run's end below
            exc = caught
            if self.cancelled_by and isinstance(exc, asyncio.CancelledError):
                exc = RunCancelled(f"cancelled from the site by {self.cancelled_by}")
            interrupted = isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError, RunInterrupted))
            reason = (f"interrupted{f' ({exc})' if isinstance(exc, RunInterrupted) else ''}; "
                      f"resume with --resume {stamp}" if interrupted
                      else redact_urls_in(f"{type(exc).__name__}: {exc}"))
            log.write(f"Run aborted: {reason}", "ERROR")
            if self.run_id is not None:
                try:
                    await sync_to_async(services.run_close)(
                        run_id=self.run_id, status="interrupted" if interrupted else "failed", error=reason)
                    live = getattr(self, "live", None)
                    if live is not None:  # watchers learn the run stopped (and can offer Resume)
                        live.run_ended(status="interrupted" if interrupted else "failed", error=reason)
                        await live.flush()
                except Exception as close_error:  # never hide the original failure
                    log.write(f"Could not record the run's end: {close_error}", "ERROR")
            if isinstance(exc, RunInterrupted):
                raise type(exc)(reason) from caught  # the operator sees how to resume
            raise
        finally:
            for helper in (cancel_listener, heartbeat):
                if helper is not None:
                    helper.cancel()
            log.close()

    def _cancelled_from_afar(self, by: str) -> None:
        self.cancelled_by = by
        self.log.write(f"Cancel requested from the site by {by}")

    def _classify(self, queue: list[QueueItem], resuming: bool) -> list[QueueItem]:
        """§3.1 step 7: load completed scenarios, move in-flight ones aside, keep the rest. With
        leases (other processes may run this run's scenarios) an in-flight directory is left to
        the delivery, which moves it aside only once it holds the scenario's lease."""
        resume_stamp = resume_rules.timestamp(datetime.now())
        pending = []
        busy = self._busy(queue) if resuming else set()
        for item in queue:
            scenario_dir = self.session_dir / item.dir_name
            state, reason = resume_rules.classify(scenario_dir, self.options.min_agent_turns)
            if state == resume_rules.COMPLETED:
                metrics = resume_rules.read_metrics(scenario_dir)
                metrics["scenario_directory"] = str(scenario_dir)
                self.results[item.position] = (metrics, scenario_dir)
                self.loaded += 1
                self.loaded_items.append(item)
                self.log.write(f"{item.dir_name}: completed ({reason}); loaded")
                continue
            if state == resume_rules.IN_FLIGHT and item.dir_name in busy:
                self.log.write(f"{item.dir_name}: in flight on a live worker; left to it")
            elif state == resume_rules.IN_FLIGHT and self.leases is not None:
                self.log.write(f"{item.dir_name}: in flight ({reason}); moved aside by whoever takes its lease")
            elif state == resume_rules.IN_FLIGHT:
                moved = resume_rules.move_aside(scenario_dir, resume_stamp)
                self.log.write(f"{item.dir_name}: in flight ({reason}); moved to {moved.name}")
            pending.append(item)
        return pending

    def _busy(self, queue: list[QueueItem]) -> set[str]:
        """Scenarios a live process holds now (resume leaves their directories alone)."""
        if self.leases is None:
            return set()
        return self.leases.held(item.dir_name for item in queue if (self.session_dir / item.dir_name).is_dir())

    async def _record_loaded(self) -> None:
        """Rows for scenarios completed by an earlier invocation (a database that missed them,
        e.g. killed between metrics.json and its row, catches up here)."""
        for item in self.loaded_items:
            metrics, scenario_dir = self.results[item.position]
            await sync_to_async(services.scenario_result_record)(
                run_id=self.run_id, metrics=metrics, position=item.position, trial=item.trial,
                condition=item.condition, final_db=load_final_db(scenario_dir))

    def _warn_judge_signals(self, names: list[str]) -> None:
        """§3.1 step 6: a whitelisted judge signal can never pass without a judge."""
        judged = {"judge_passed", "nl_assertion"}
        needing = [name for name in names if judged & set(get_eval_scenario(name).success_signals or ())]
        if needing:
            self.log.warning(f"No judge configured, but these scenarios whitelist a judge signal: {', '.join(needing)}")

    def _context(self, stamp: str) -> RunContext:
        """What the executor works with; the display is the caller's sink, without the live group."""
        return RunContext(
            run_id=self.run_id, stamp=stamp, session_dir=self.session_dir, options=self.options, log=self.log,
            progress=self.progress, display=self.display, accept=self._accept, leases=self.leases,
            user_endpoint=self.user_endpoint)

    def _accept(self, item: QueueItem, metrics: dict[str, Any], scenario_dir: Path) -> None:
        """An executor's accepted attempt of ``item``."""
        self.results[item.position] = (metrics, scenario_dir)
        self.executed += 1

    async def _finish(self, queue: list[QueueItem], names: list[str], warnings: list[str]) -> RunReport:
        """§3.1 step 9: the run files over every queued scenario, in queue order, and the rows."""
        await sync_to_async(services.run_prune_results)(
            run_id=self.run_id, keep=[item.key for item in queue])
        ordered = [self.results[item.position] for item in queue]
        aggregator = RunAggregator(self.options.min_agent_turns)
        for metrics, scenario_dir in ordered:
            aggregator.add(metrics, scenario_dir)
        block = ProjectBlock(trials=self.options.trials, null_agent_floor=null_agent_floor(names))
        summary = format_all_summary(aggregator, min_agent_turns=self.options.min_agent_turns, project_block=block)
        all_metrics = [metrics for metrics, _ in ordered]
        write_json(self.session_dir / "all_metrics.json", all_metrics)
        write_text_atomic(self.session_dir / "all_latencies.csv", format_latencies_csv(all_metrics))
        write_text_atomic(self.session_dir / "all_summary.txt", summary)
        rate = aggregator.rate(SUCCESS)
        self.log.write(f"Run finished: {len(all_metrics)} scenario(s), success rate "
                       f"{'N/A' if rate is None else f'{rate * 100:.2f}%'}")
        for line in summary.splitlines():
            if line.startswith(("Overall Success Rate", "Task Success Rate", "  DB-State match", "  Clean exit")):
                self.log.write(line.strip())
        await sync_to_async(services.run_close)(run_id=self.run_id, status="finished", summary_text=summary,
                                                success_rate=rate)
        self.progress.run_finished(success_rate=rate)
        await self.live.flush()
        return RunReport(self.session_dir, self.run_id, all_metrics, summary, rate,
                         loaded=self.loaded, executed=self.executed, warnings=warnings)


async def run_evaluation(options: RunOptions, *, argv: list[str] | None = None,
                         progress: ProgressSink | None = None, source: str = "cli",
                         owner_id: int | None = None,
                         on_open: Callable[[int], None] | None = None,
                         user_endpoint: PeerEndpoint | None = None) -> RunReport:
    """Run (or resume) an evaluation; raises RunError for operator errors.

    ``user_endpoint`` puts a live peer (a human tester) on the user side of every attempt."""
    run = _Run(options, list(argv or []), progress or NullProgress(), source)
    run.owner_id, run.on_open, run.user_endpoint = owner_id, on_open, user_endpoint
    return await run.execute()
