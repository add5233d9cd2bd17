"""What every entry point does to options before a run: ``--resume`` inherits the recorded
settings, and the operator's limits bound the values (settings resolved once, here)."""
from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings

from scoring.runs.options.limits import Limits
from scoring.runs.options.resume_defaults import ResumeDefaults, adopt_recorded, recorded_invocation
from scoring.runs.options.schema import RunOptions
from scoring.runs.options.validation import validate


VOICE_CALLS_PER_CORE = 1
"""Voice calls at once per core when ``--concurrency`` is not given. Why 1: on 2 cores the five
seeds ran 5/5 at 1 and 2 calls (411 s and 253 s wall), but 1/5 at 5, where handoff p95 reached
9.9 s; at 2 it was 2.6 s against 1.6 s for one call (bench/speech_concurrency.py, README)."""


TEXT_SCENARIOS_PER_CORE = 16
"""Text scenarios at once per core when ``--concurrency`` is not given. Why 16: a text scenario
computes for about 0.1 CPU s and then waits out the spec's 0.5 s settle before its pulls, so a
process needs six or more at once to keep its core busy; 16 leaves room for scenarios with more
turns (bench/run_eval_text.py, README)."""


def machine_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def executor_of(options: RunOptions) -> str:
    """The executor the run will use (``--executor``, else ``EVASITE_EXECUTOR``)."""
    return options.executor or settings.EVASITE_EXECUTOR


def default_concurrency(options: RunOptions) -> int:
    """``--concurrency`` when not given: what this machine's cores carry (a voice call needs about
    a core, a text scenario a sixteenth); with single-client bot servers, 1. A text run that calls
    an LLM endpoint (agent, passenger or judge) is 1, as the spec has it: there the endpoint is the
    limit, and a local server with one slot would make 32 scenarios wait on each other."""
    if options.agent_url or options.user_url:
        return 1
    if options.modality == "voice":
        return max(1, VOICE_CALLS_PER_CORE * machine_cores())
    if options.agent_llm_url or options.user_llm_url or options.judge_url:
        return 1
    return max(1, TEXT_SCENARIOS_PER_CORE * machine_cores())


def default_processes(options: RunOptions, *, forkable: bool) -> int:
    """``--processes`` when not given: in text, one per core when the workers can be forked from
    an imported ``run_eval`` (a worker started cold spends about 2 s importing, more than its
    share of a text run); in voice 1, because two processes measured no better than one (the
    cores are the limit, not one process)."""
    if options.modality == "voice" or not forkable or executor_of(options) != "local" \
            or options.agent_url or options.user_url:
        return 1
    return machine_cores()


def resolve_defaults(options: RunOptions, limits: Limits | None = None, *, forkable: bool = False) -> None:
    """Fill in the defaults that depend on the run and the machine, within the operator's limits
    (the run records the values resolved). ``forkable``: the caller can fork its workers
    (``executors.forked``)."""
    if options.concurrency is None:
        options.concurrency = min(default_concurrency(options), (limits or Limits()).concurrency)
    if options.processes is None:
        options.processes = min(default_processes(options, forkable=forkable), options.concurrency)


def prepare(options: RunOptions, *, explicit: set[str], forkable: bool = False) -> ResumeDefaults | None:
    """Adopt a resumed run's recorded settings (flags in ``explicit`` win), then validate against
    the operator's limits; raises OptionsError. Returns what the resume took, for the console."""
    adopted = None
    if options.resume:
        recorded = recorded_invocation(Path(options.output_dir).expanduser() / f"eval_{options.resume}")
        if recorded is not None:
            adopted = adopt_recorded(options, explicit, recorded)
    limits = Limits.from_settings()
    resolve_defaults(options, limits, forkable=forkable)
    validate(options, limits=limits)
    return adopted
