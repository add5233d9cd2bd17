"""What every entry point does to options before a run: ``--resume`` inherits the recorded
settings, and the operator's limits bound the values (settings resolved once, here)."""
from __future__ import annotations

from pathlib import Path

from scoring.runs.options.limits import Limits
from scoring.runs.options.resume_defaults import ResumeDefaults, adopt_recorded, recorded_invocation
from scoring.runs.options.schema import RunOptions
from scoring.runs.options.validation import validate


def prepare(options: RunOptions, *, explicit: set[str]) -> ResumeDefaults | None:
    """Adopt a resumed run's recorded settings (flags in ``explicit`` win), then validate against
    the operator's limits; raises OptionsError. Returns what the resume took, for the console."""
    adopted = None
    if options.resume:
        recorded = recorded_invocation(Path(options.output_dir).expanduser() / f"eval_{options.resume}")
        if recorded is not None:
            adopted = adopt_recorded(options, explicit, recorded)
    validate(options, limits=Limits.from_settings())
    return adopted
