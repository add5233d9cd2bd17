"""Run options: declared once (``schema``), parsed from a command line (``cli``), checked
(``validation``, bounded by ``limits``), recorded (``argv``, ``redaction``) and inherited on
``--resume`` (``resume_defaults``)."""
from scoring.runs.options.argv import options_argv
from scoring.runs.options.cli import add_run_arguments, explicit_options, options_from_mapping
from scoring.runs.options.limits import Limits
from scoring.runs.options.redaction import REDACTED, redact_url, redact_urls_in
from scoring.runs.options.schema import EXECUTORS, FIELDSETS, RunOptions, Spec, option_fields, spec_of
from scoring.runs.options.validation import OptionsError, validate

__all__ = [
    "EXECUTORS", "FIELDSETS", "REDACTED", "Limits", "OptionsError", "RunOptions", "Spec",
    "add_run_arguments", "explicit_options", "option_fields", "options_argv", "options_from_mapping",
    "redact_url", "redact_urls_in", "spec_of", "validate",
]
