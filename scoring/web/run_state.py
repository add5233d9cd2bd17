"""How the site presents a run's state: its status in words, which controls it offers, the notice
that explains an unfinished run, and who sat on each side of the call.

A presenter over stored fields, read-only: a run whose coordinating process died is *shown* as
stopped (with Resume) without writing anything; the write happens when someone resumes it, or at
a server's start-up sweep (``scoring.web.recovery``). The runner's own messages are written for
the command line ("resume with --resume <TS>"); pages say it in the site's words instead.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from scoring.models import Run
from scoring.runs.liveness import Coordinator, coordinator_of, gone_reason
from scoring.web.scenario_history import agent_label

STATUS_LABELS = {
    Run.Status.RUNNING: "running",
    Run.Status.FINISHED: "finished",
    Run.Status.FAILED: "failed",
    Run.Status.INTERRUPTED: "stopped",
}
_CLI_RESUME_HINT = re.compile(r";?\s*resume (?:it )?with (?:run_eval )?--resume \S+\.?", re.I)
_PARENTHESISED = re.compile(r"^\((.*)\)$")
_GONE = re.compile(r"coordinating process \(([^,]*), pid (\d+)\) is gone")
_SILENT = re.compile(r"coordinating process \(([^,]*), pid (\d+)\) fell silent \((\d+) s without a heartbeat\)")
_CANCELLED_BY = re.compile(r"^cancelled from the site by (.+)$")


@dataclass(frozen=True)
class Notice:
    kind: str  # "info" (stopped, resumable) or "error" (failed)
    text: str
    detail: str = ""


@dataclass(frozen=True)
class RunState:
    status: str
    label: str
    remaining: int
    may_cancel: bool
    may_resume: bool
    notice: Notice | None
    orphaned: bool


def _remaining(run: Run) -> int:
    return max(0, run.total_scenarios - run.completed_scenarios)


def run_orphaned(run: Run, this_host: str | None = None) -> bool:
    """A running run whose coordinating process is gone: on this host by its pid, from any
    other by its heartbeat (read-only check)."""
    return run.status == Run.Status.RUNNING and coordinator_of(run, this_host) is Coordinator.GONE


def stop_reason_text(error: str) -> str:
    """Why an interrupted run stopped, in the site's words ("" when the runner gave no reason)."""
    text = _CLI_RESUME_HINT.sub("", error or "").strip()
    cancelled = _CANCELLED_BY.match(text)
    if cancelled:
        return f"It was cancelled by {cancelled.group(1)}."
    gone = _GONE.search(text)
    if gone:
        return f"The process that coordinated it ({gone.group(1)}, pid {gone.group(2)}) is no longer running."
    silent = _SILENT.search(text)
    if silent:
        return (f"The process that coordinated it ({silent.group(1)}, pid {silent.group(2)}) has not been "
                f"heard from for {silent.group(3)} s.")
    text = re.sub(r"^interrupted[:;]?\s*", "", text, flags=re.I).strip()
    text = _PARENTHESISED.sub(r"\1", text).strip()
    return f"Reason: {text}." if text else "It was cancelled or interrupted before it finished."


def run_state(run: Run, *, may_control: bool, this_host: str | None = None) -> RunState:
    """Status, controls and notice for one run as a given user sees it."""
    orphaned = run_orphaned(run, this_host)
    status = Run.Status.INTERRUPTED if orphaned else run.status
    remaining = _remaining(run)
    resumable = status in (Run.Status.INTERRUPTED, Run.Status.FAILED) or (
        status == Run.Status.FINISHED and remaining > 0)
    notice = None
    counted = f"{run.completed_scenarios} of {run.total_scenarios} scenario runs have results."
    if remaining > 0:
        next_step = (f" Resume runs the other {remaining}; finished ones are kept." if may_control
                     else " Its owner or staff can resume it.")
    else:
        next_step = ""
    if status == Run.Status.INTERRUPTED:
        reason = stop_reason_text(gone_reason(run, this_host) if orphaned else run.error)
        notice = Notice("info", f"This run stopped before it finished. {reason} {counted}{next_step}")
    elif status == Run.Status.FAILED:
        detail = _CLI_RESUME_HINT.sub("", run.error or "").strip()
        notice = Notice("error", f"This run failed. {counted}{next_step}", detail)
    elif status == Run.Status.FINISHED and remaining > 0:
        notice = Notice("info", f"This run finished without a result for {remaining} scenario run"
                                f"{'s' if remaining != 1 else ''}. {counted}{next_step}")
    return RunState(
        status=status,
        label=STATUS_LABELS.get(status, status),
        remaining=remaining,
        may_cancel=may_control and status == Run.Status.RUNNING,
        may_resume=may_control and resumable,
        notice=notice,
        orphaned=orphaned,
    )


def cancel_refusal(run: Run) -> str:
    """What a Cancel that this server cannot carry out says (nothing about a terminal's Ctrl-C)."""
    if run.status != Run.Status.RUNNING or run_orphaned(run):
        return f"This run has already {'finished' if run.status == Run.Status.FINISHED else 'stopped'}; there is nothing to cancel."
    where = f" on {run.coordinator_host}" if run.coordinator_host else ""
    reach = "Cancel reaches it from here only when both share the Redis channel layer (REDIS_URL) and it answers."
    if run.source == Run.Source.CLI:
        return f"This run was started from the command line{where} and is coordinated there, not by this server. {reach}"
    return f"This run is coordinated by another server process{where}. {reach}"


def passenger_label(run: Run) -> str:
    """Who played the passenger: the tester for a human call, else the passenger model or bot."""
    if run.source == Run.Source.HUMAN:
        who = run.owner.get_username() if run.owner_id and run.owner else "a person"
        return f"{who} (human)"
    args = run.parsed_args or {}
    if args.get("user_url"):
        return str(args["user_url"])
    model = run.user_model or str(args.get("user_model") or "")
    url = args.get("user_llm_url")
    return f"{model} @ {url}" if url else (model or "—")


def run_agent_label(run: Run) -> str:
    return agent_label(run.parsed_args or {}, run.agent_model) or "—"


def run_labels(run: Run) -> dict[str, Any]:
    """The run's sides and origin for its page and its rows in lists."""
    return {"agent": run_agent_label(run), "passenger": passenger_label(run),
            "human": run.source == Run.Source.HUMAN}
