"""What every entry point does to options before a run: ``--resume`` inherits the recorded
settings, and the operator's limits bound the values (settings resolved once, here)."""
from __future__ import annotations

import os
from pathlib import Path

from scoring.runs.options.limits import Limits
from scoring.runs.options.resume_defaults import ResumeDefaults, adopt_recorded, recorded_invocation
from scoring.runs.options.schema import RunOptions
from scoring.runs.options.validation import validate


VOICE_CALLS_PER_CORE = 1
"""Voice calls at once per core when ``--concurrency`` is not given. Why 1: on 2 cores the five
seeds ran 5/5 at 1 and 2 calls (411 s and 253 s wall), but 1/5 at 5, where handoff p95 reached
9.9 s; at 2 it was 2.6 s against 1.6 s for one call (bench/speech_concurrency.py, README)."""


def default_concurrency(options: RunOptions) -> int:
    """``--concurrency`` when not given: in voice, what this machine's cores carry; in text (cheap,
    and order-sensitive tooling reads its logs) and with single-client bot servers, 1."""
    if options.modality != "voice" or options.agent_url or options.user_url:
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, VOICE_CALLS_PER_CORE * cores)


def resolve_defaults(options: RunOptions, limits: Limits | None = None) -> None:
    """Fill in the defaults that depend on the run and the machine, within the operator's limits
    (the run records the values resolved)."""
    if options.concurrency is None:
        options.concurrency = min(default_concurrency(options), (limits or Limits()).concurrency)


def prepare(options: RunOptions, *, explicit: set[str]) -> ResumeDefaults | None:
    """Adopt a resumed run's recorded settings (flags in ``explicit`` win), then validate against
    the operator's limits; raises OptionsError. Returns what the resume took, for the console."""
    adopted = None
    if options.resume:
        recorded = recorded_invocation(Path(options.output_dir).expanduser() / f"eval_{options.resume}")
        if recorded is not None:
            adopted = adopt_recorded(options, explicit, recorded)
    limits = Limits.from_settings()
    resolve_defaults(options, limits)
    validate(options, limits=limits)
    return adopted
