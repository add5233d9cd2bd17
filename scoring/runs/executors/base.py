"""What every executor shares: the queue item, the run context an executor works in, and the
error types the runner turns into a failed or interrupted run."""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from scoring.core.attempt_names import attempt_name
from scoring.runs.evallog import EvalLog
from scoring.runs.executors.lease import RunLeases
from scoring.runs.progress import ProgressSink
from scoring.runs.options import RunOptions
from voice.bridge.endpoints import PeerEndpoint


class RunError(RuntimeError):
    """An operator error or a run that cannot continue (exit 1)."""


class RunInterrupted(RunError):
    """The run stopped without a verdict (lost broker, no worker progress): resume it later."""


class RunCancelled(RunInterrupted):
    """Someone cancelled the run from the site while another process coordinated it."""


@dataclass(frozen=True)
class QueueItem:
    """One scenario (one trial of it) in queue order."""

    position: int
    scenario_name: str
    trial: int
    trials: int
    condition: str = ""
    """The condition's directory-safe name (``--conditions``); "" in a run without conditions."""

    @property
    def dir_name(self) -> str:
        return attempt_name(self.scenario_name, self.trial, self.trials, self.condition)

    @property
    def key(self) -> tuple[str, int, str]:
        """What the database keeps one result for (with the run)."""
        return self.scenario_name, self.trial, self.condition

    def to_payload(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RunContext:
    """The parts of a run an executor needs; ``accept`` hands a finished scenario back to the run."""

    run_id: int
    stamp: str
    session_dir: Path
    options: RunOptions
    log: EvalLog
    progress: ProgressSink  # terminal display and the run's live group
    display: ProgressSink  # terminal display only (workers publish to the live group themselves)
    accept: Callable[[QueueItem, dict[str, Any], Path], None]
    leases: RunLeases | None = None
    """The scenario leases deliveries take (the celery executor; a local resume of a celery run)."""
    user_endpoint: PeerEndpoint | None = None
    """A live user peer (a human tester's call) for every attempt (local executor only)."""


class Executor(Protocol):
    name: str

    def preflight(self, options: RunOptions, names: list[str]) -> None:
        """Raise RunError before anything is written when this executor cannot run ``options``
        over the selected scenarios ``names``."""

    def leases(self, run_id: int, session_dir: Path, resuming: bool) -> RunLeases | None:
        """The leases this run's deliveries take, or None when no other process can run its
        scenarios (resume then leaves scenarios held by live processes alone)."""

    async def run_items(self, run: RunContext, pending: list[QueueItem]) -> None:
        """Run every pending item to an accepted attempt (``run.accept``), or raise."""


async def run_all(awaitables: list[Awaitable[None]]) -> None:
    """Run them at once; the first failure (or a cancellation) cancels the others, which are
    waited for before it is raised, so no attempt outlives its run."""
    tasks = [asyncio.ensure_future(awaitable) for awaitable in awaitables]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
