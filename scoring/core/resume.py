"""Resume and automatic-retry decisions (§16, §17) and the ``check_resume`` preview (§18).

``--resume``, the in-run retry loop and ``check_resume`` must agree on what "finished" means, so
they all classify a directory here, with the agent-turn count of ``scoring.core.signals``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from scoring.core.files import read_json
from scoring.core.signals import STOP_DISCONNECTED, agent_turn_count, is_stalled

FRESH = "fresh"
IN_FLIGHT = "in_flight"
COMPLETED = "completed"
KILLED_MARKER = "__KILLED__"
KILLED_INFIX = ".killed."
TIMESTAMP_FORMAT = "%Y%m%d_%H%M%S"
SCENARIO_DIR_MARKERS = ("metrics.json", "bridge_log.txt", "scenario_config")

RESUME_WARNING = (
    "WARNING: resume settings differ from the original invocation; aggregates may mix scenarios "
    "scored with different settings:"
)


# --- §16.1 --------------------------------------------------------------------------------------


def read_metrics(scenario_dir: Path) -> dict[str, Any]:
    """``metrics.json`` as a dict; raises OSError / ValueError when missing, unreadable or not an object."""
    metrics = read_json(Path(scenario_dir) / "metrics.json")
    if not isinstance(metrics, dict):
        raise ValueError("metrics.json is not a JSON object")
    return metrics


def classify(scenario_dir: Path, min_agent_turns: int) -> tuple[str, str]:
    """``(state, reason)`` of a scenario directory, first matching row of §16.1."""
    scenario_dir = Path(scenario_dir)
    if not scenario_dir.is_dir():
        return FRESH, "no subdir"
    if not (scenario_dir / "metrics.json").exists():
        return IN_FLIGHT, "no metrics.json (in-flight)"
    try:
        metrics = read_metrics(scenario_dir)
    except (OSError, ValueError) as exc:
        return IN_FLIGHT, f"metrics.json unreadable ({exc})"
    if not metrics.get("total_turns"):
        return IN_FLIGHT, "0 turns (bot crashed before audio)"
    stop_reason = metrics.get("stop_reason") or "?"
    count = agent_turn_count(metrics, scenario_dir)
    if is_stalled(count, min_agent_turns):
        return IN_FLIGHT, f"{count} agent LLM response(s) < {min_agent_turns} ({stop_reason})"
    return COMPLETED, str(stop_reason)


# --- moving attempts aside ----------------------------------------------------------------------


def timestamp(when: datetime) -> str:
    """``YYYYMMDD_HHMMSS``, the session and ``.killed.`` timestamp format."""
    return when.strftime(TIMESTAMP_FORMAT)


def autoretry_suffix(retries: int, when: datetime) -> str:
    """Suffix for an attempt discarded by the in-run retry loop: ``autoretry<N>.<TS>``."""
    return f"autoretry{retries}.{timestamp(when)}"


def move_aside(scenario_dir: Path, suffix: str) -> Path:
    """Rename ``<scenario>`` to ``<scenario>.killed.<suffix>`` and drop an empty ``__KILLED__`` in it.

    Never overwrites, because moved-aside attempts are evidence: when the name is taken (two
    resumes within one second, each finding the scenario in flight) the next free
    ``<suffix>_2``, ``_3``... is used.
    """
    scenario_dir = Path(scenario_dir)
    base = scenario_dir.with_name(f"{scenario_dir.name}{KILLED_INFIX}{suffix}")
    target, n = base, 1
    while target.exists():
        n += 1
        target = base.with_name(f"{base.name}_{n}")
    scenario_dir.rename(target)
    (target / KILLED_MARKER).touch()
    return target


# --- §16.3 --------------------------------------------------------------------------------------


def resume_mismatches(previous: Mapping[str, Any], current: Mapping[str, Any], compared: Iterable[str]) -> list[str]:
    """``<field>: original=<old> resume=<new>`` for each ``compared`` setting (§16.3 plus the
    project's, declared with the options) that changed.

    A field missing from the previous record (written by an older version) is not compared.
    """
    return [
        f"{name}: original={previous[name]} resume={current.get(name)}"
        for name in compared
        if name in previous and previous[name] != current.get(name)
    ]


def format_resume_warning(mismatches: list[str]) -> str | None:
    """The one warning with every difference under it; None when nothing changed."""
    if not mismatches:
        return None
    return "\n".join([RESUME_WARNING] + [f"  {line}" for line in mismatches])


# --- §17 ----------------------------------------------------------------------------------------


def retry_reason(
    *,
    error: BaseException | None = None,
    metrics: Mapping[str, Any] | None = None,
    scenario_dir: Path | None = None,
    stale_retry: bool = True,
    retry_insufficient_turns: bool = False,
    min_agent_turns: int = 0,
) -> str | None:
    """Why this attempt should be discarded and re-run, or None to accept it.

    Rows are tried in table order and a disabled row is skipped, so a 0-turn attempt can still be
    retried as stalled when only ``--auto-resume-on-insufficient-turns`` is on.
    """
    if metrics is None:
        if error is not None and stale_retry:
            return f"attempt error: {type(error).__name__}: {error}"
        return None
    if stale_retry and not metrics.get("total_turns"):
        return "0 conversation turns (bots never exchanged audio)"
    if stale_retry and metrics.get("stop_reason") == STOP_DISCONNECTED and not _agent_spoke(metrics):
        return "[DISCONNECTED] before the agent's first turn"
    if retry_insufficient_turns and min_agent_turns > 0:
        count = agent_turn_count(metrics, scenario_dir)
        if is_stalled(count, min_agent_turns):
            return f"{count} agent LLM response(s) < {min_agent_turns} (insufficient agent turns)"
    return None


def _agent_spoke(metrics: Mapping[str, Any]) -> bool:
    turns = metrics.get("turns")
    return isinstance(turns, list) and any(isinstance(t, Mapping) and t.get("role") == "agent" for t in turns)


# --- §18 ----------------------------------------------------------------------------------------


def scenario_dirs(eval_dir: Path) -> list[Path]:
    """A session's scenario directories (§18 walk: sorted, moved-aside attempts left out)."""
    dirs = []
    for entry in sorted(eval_dir.iterdir(), key=lambda p: p.name):
        if not entry.is_dir() or KILLED_INFIX in entry.name or entry.name == KILLED_MARKER:
            continue
        if any((entry / marker).exists() for marker in SCENARIO_DIR_MARKERS):
            dirs.append(entry)
    return dirs


def _retry_info(scenario_dir: Path) -> tuple[int, list[str]]:
    try:
        metrics = read_metrics(scenario_dir)
    except (OSError, ValueError):
        return 0, []
    count = metrics.get("auto_retry_count")
    reasons = metrics.get("auto_retry_reasons")
    count = count if isinstance(count, int) and not isinstance(count, bool) else 0
    return count, [str(r) for r in reasons] if isinstance(reasons, list) else []


def check_resume_report(eval_dir: Path, min_agent_turns: int) -> str:
    """The read-only preview printed by ``check_resume``; never renames or writes."""
    eval_dir = Path(eval_dir)
    if not eval_dir.is_dir():
        raise NotADirectoryError(f"{eval_dir} is not a directory")
    rerun: list[str] = []
    retried: list[str] = []
    fresh: list[str] = []
    completed = 0
    for scenario_dir in scenario_dirs(eval_dir):
        state, reason = classify(scenario_dir, min_agent_turns)
        retries, reasons = _retry_info(scenario_dir)
        if state == IN_FLIGHT:
            note = f"; already auto-retried {retries}x in-run" if retries >= 1 else ""
            rerun.append(f"  {scenario_dir.name}  [{reason}{note}]")
        elif state == FRESH:
            fresh.append(f"  {scenario_dir.name}")
        else:
            completed += 1
            if retries >= 1:
                retried.append(f"  {scenario_dir.name}  [auto-retried {retries}x in-run: {'; '.join(reasons)}]")
    total = completed + len(rerun) + len(fresh)
    lines = [
        f"Eval dir : {eval_dir}",
        f"Min agent turns: {min_agent_turns}",
        f"Total scenarios: {total}  ({completed} completed, {len(rerun)} would re-run, {len(fresh)} fresh)",
    ]
    if rerun:
        lines += ["", f"Would re-run ({len(rerun)}):"] + rerun
    if retried:
        lines += ["", f"Completed after automatic in-run retry ({len(retried)}):"] + retried
    if fresh:
        lines += ["", f"Fresh / never started ({len(fresh)}):"] + fresh
    if not rerun and not fresh:
        lines += ["", "All scenarios are complete — nothing to resume."]
    return "\n".join(lines) + "\n"
