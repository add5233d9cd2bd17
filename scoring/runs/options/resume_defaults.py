"""``--resume TS`` continues the run it names: every flag not typed again takes the value the run
was recorded with (run_args.json's last invocation), so a resume cannot silently switch a text run
to voice or change its selection. Typed flags still win; every difference is reported."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scoring.core.files import read_json
from scoring.runs.options.redaction import REDACTED
from scoring.runs.options.schema import RunOptions, flag_of, option_fields

NOT_INHERITED = frozenset({"resume", "output_dir"})
"""Where to find the run, not how it ran."""


@dataclass
class ResumeDefaults:
    """What a resume took from the record, and where the typed flags differ from it."""

    inherited: dict[str, Any] = field(default_factory=dict)
    overridden: list[str] = field(default_factory=list)  # "--flag: recorded=X now=Y"
    unrecoverable: list[str] = field(default_factory=list)  # stored redacted: the secret is gone

    def lines(self, stamp: str) -> list[str]:
        """The console report of the resume's settings."""
        lines = [f"Resuming eval_{stamp} with its recorded settings"
                 + (f" ({len(self.inherited)} taken from the record)" if self.inherited else "")]
        lines += [f"  overridden on the command line: {entry}" for entry in self.overridden]
        lines += [f"  stored redacted, give it again if it is needed: {flag}" for flag in self.unrecoverable]
        return lines


def recorded_invocation(session_dir: Path) -> Mapping[str, Any] | None:
    """``parsed_args`` of the last invocation in ``session_dir/run_args.json`` (None if unreadable)."""
    try:
        payload = read_json(Path(session_dir) / "run_args.json")
    except (OSError, ValueError):
        return None
    if isinstance(payload, dict) and isinstance(payload.get("invocations"), list) and payload["invocations"]:
        payload = payload["invocations"][-1]
    parsed = payload.get("parsed_args") if isinstance(payload, dict) else None
    return parsed if isinstance(parsed, dict) else None


def adopt_recorded(options: RunOptions, explicit: set[str], recorded: Mapping[str, Any]) -> ResumeDefaults:
    """Fill every option of ``options`` not in ``explicit`` from ``recorded``; report the rest."""
    report = ResumeDefaults()
    for item, spec in option_fields():
        name = item.name
        if name in NOT_INHERITED or name not in recorded:
            continue
        value = recorded[name]
        if _is_redacted(value) and name not in explicit:
            report.unrecoverable.append(flag_of(name))
            if spec.secret:
                continue  # an inline key is never stored: the key-name variable serves instead
        value = list(value) if isinstance(value, list) else value
        if name in explicit:
            current = getattr(options, name)
            if current != value:
                report.overridden.append(f"{flag_of(name)}: recorded={_show(value)} now={_show(current)}")
            continue
        if getattr(options, name) != value:
            report.inherited[name] = value
        setattr(options, name, value)
    return report


def _is_redacted(value: Any) -> bool:
    return isinstance(value, str) and REDACTED in value


def _show(value: Any) -> str:
    return " ".join(map(str, value)) if isinstance(value, list) else str(value)


def resume_options(parsed_args: Mapping[str, Any], *, timestamp: str, session_dir: str) -> RunOptions:
    """The options to resume a stored run (the Resume button, a worker's takeover): its recorded
    flags plus ``--resume`` of its session. An inline judge key is never stored, so a resume
    reads the key from its environment name."""
    options = RunOptions(resume=timestamp, output_dir=str(Path(session_dir).parent))
    adopt_recorded(options, set(NOT_INHERITED), parsed_args)
    return options
