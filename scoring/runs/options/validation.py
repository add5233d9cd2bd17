"""One validation for every entry point (harness.md §19.2 plus the project's rules): the command
line, the New-run form, a human call and a resume all refuse the same values with the same
one-line messages. Per-option checks come from the declarations; the rest are cross-field rules."""
from __future__ import annotations

import math
from typing import Any

from scoring.runs.options.conditions import conditions_problem, run_conditions
from scoring.runs.options.limits import Limits
from scoring.runs.options.redaction import redact_urls_in
from scoring.runs.options.schema import RunOptions, Spec, flag_of, option_fields


class OptionsError(ValueError):
    """A usage error (exit 2); the message names the flag."""


def validate(options: RunOptions, *, limits: Limits | None = None) -> None:
    """Raise OptionsError for the first usage error in ``options``."""
    limits = limits or Limits()
    for item, spec in option_fields():
        check_value(item.name, getattr(options, item.name), spec, limits)
    repeated = sorted({name for name in options.scenarios if options.scenarios.count(name) > 1})
    if repeated:
        raise OptionsError(f"--scenarios names a scenario more than once: {', '.join(repeated)} (use --trials)")
    if options.fail_on_regression and not options.baseline:
        raise OptionsError("--fail-on-regression needs --baseline (the run to compare with)")
    if (options.concurrency or 1) > 1 and (options.agent_url or options.user_url):
        raise OptionsError("--concurrency > 1 cannot be used with --agent-url/--user-url (single-client bot servers)")
    problem = conditions_problem(options.conditions, modality=options.modality, user_url=options.user_url)
    if problem:
        raise OptionsError(problem)
    attempts = selected_count(options) * options.trials * max(1, len(run_conditions(options.conditions)))
    if attempts > limits.attempts:
        raise OptionsError(f"the run would start {attempts} attempts (scenarios × --trials × --conditions), "
                           f"more than the limit of {limits.attempts}")
    _check_model_slots(options)


def check_value(name: str, value: Any, spec: Spec, limits: Limits) -> None:
    """One option's type, choices and bounds (``None`` means "not given" and is always fine)."""
    flag = flag_of(name)
    if value is None:
        return
    if spec.kind is bool:
        if not isinstance(value, bool):
            raise OptionsError(f"{flag} is a switch (true or false)")
        return
    if spec.kind is list:
        if not isinstance(value, list) or not all(isinstance(entry, str) for entry in value):
            raise OptionsError(f"{flag} must be a list of names")
        return
    if spec.kind in (int, float):
        _check_number(flag, value, spec, limits)
        return
    if not isinstance(value, str):
        raise OptionsError(f"{flag} must be text")
    if spec.choices is not None and value not in spec.choices:
        raise OptionsError(f"{flag} must be one of {', '.join(spec.choices)}")


def _check_number(flag: str, value: Any, spec: Spec, limits: Limits) -> None:
    integral = spec.kind is int
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integral and not isinstance(value, int)):
        raise OptionsError(f"{flag} must be {'an integer' if integral else 'a number'}")
    if not math.isfinite(value):
        raise OptionsError(f"{flag} must be a finite number")
    if spec.above is not None and value <= spec.above:
        raise OptionsError(f"{flag} must be > {_show(spec.above)}")
    if spec.low is not None and value < spec.low:
        raise OptionsError(f"{flag} must be >= {_show(spec.low)}")
    high = upper_bound(spec, limits)
    if high is not None and value > high:
        raise OptionsError(f"{flag} must be <= {_show(high)}")


def upper_bound(spec: Spec, limits: Limits) -> float | None:
    """The tighter of the option's fixed bound and its operator limit."""
    bounds = [bound for bound in (spec.high, getattr(limits, spec.limit) if spec.limit else None) if bound is not None]
    return min(bounds) if bounds else None


def _show(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


def selected_count(options: RunOptions) -> int:
    """How many scenarios the selection names (explicit names, a domain, else all)."""
    if options.scenarios:
        return len(options.scenarios)
    from scenarios.registry import list_eval_scenarios, scenarios_in_domain

    return len(scenarios_in_domain(options.domain) if options.domain else list_eval_scenarios())


def _check_model_slots(options: RunOptions) -> None:
    """A built-in bot's model name or endpoint key problem is a usage error, found before any run."""
    from voice.bots.factory import check_model_slot

    slots = (("agent", options.agent_url, options.agent_model, options.agent_llm_url, options.agent_api_key_name),
             ("user", options.user_url, options.user_model, options.user_llm_url, options.user_api_key_name))
    for role, url, model, llm_url, key_name in slots:
        if url:
            continue  # a protocol bot brings its own model
        try:
            check_model_slot(role, model=model, llm_url=llm_url, api_key_name=key_name)
        except ValueError as exc:
            raise OptionsError(f"--{role}-model: {redact_urls_in(str(exc))}") from exc
