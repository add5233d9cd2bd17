"""A human tester's call as a run (harness.md §3.3, §20): the same runner and attempt path as
``run_eval``, with the tester's live peer on the user side.

The voice room reaches this through ``settings.EVASITE_HUMAN_CALL_RUNNER`` (voice never imports
scoring). The result is a one-scenario session directory in the usual layout, a ``Run`` with
source ``human`` owned by the tester, and its ``ScenarioResult``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from asgiref.sync import sync_to_async
from django.conf import settings
from django.urls import reverse

from scoring.models import Run, ScenarioResult
from scoring.runs.options import Limits, OptionsError, RunOptions, options_argv, validate
from scoring.runs.runner import RunError, run_evaluation
from scoring.runs.site_policy import check_site_options


class HumanCallError(RuntimeError):
    """The call could not be set up or scored; the message is safe to show the tester."""


@dataclass(frozen=True)
class AgentChoice:
    """The agent under test, as the call page's form gives it (``run_eval``'s agent flags)."""

    model: str = ""  # empty fields keep the run options' defaults
    llm_url: str | None = None
    api_key_name: str = ""
    url: str | None = None


class _TurnSink:
    """The progress sink of a one-scenario run: only turns matter to the call page."""

    def __init__(self, on_turn: Callable[[str, str], None] | None) -> None:
        self._on_turn = on_turn

    def run_started(self, **_: Any) -> None: ...
    def scenario_started(self, name: str) -> None: ...
    def scenario_finished(self, name: str, metrics: dict[str, Any]) -> None: ...
    def run_finished(self, **_: Any) -> None: ...

    def turn(self, name: str, role: str, text: str) -> None:
        if self._on_turn is not None:
            self._on_turn(role, text)


def call_options(*, scenario_name: str, modality: str, agent: AgentChoice) -> RunOptions:
    """The ``run_eval`` flags of a human call; refused combinations raise ``HumanCallError``.

    No automatic retry: a person cannot be asked to repeat a call behind their back."""
    defaults = RunOptions()
    options = RunOptions(
        scenarios=[scenario_name],
        modality=modality,
        agent_model=agent.model or defaults.agent_model,
        agent_llm_url=agent.llm_url or None,
        agent_api_key_name=agent.api_key_name or defaults.agent_api_key_name,
        agent_url=agent.url or None,
        output_dir=settings.EVASITE_OUTPUT_DIR,
        executor="local",  # the tester's peer lives in this process (and is listenable here)
        max_auto_retries=0,
        inactivity_timeout=settings.EVASITE_CALL_INACTIVITY_TIMEOUT,
        duration=settings.EVASITE_CALL_DURATION,
    )
    try:
        check_site_options(options)  # first: validate reads the key variables it names
        validate(options, limits=Limits.from_settings())
    except OptionsError as exc:
        raise HumanCallError(str(exc)) from exc
    return options


def call_problem(*, scenario_name: str, modality: str, agent: dict[str, Any]) -> str | None:
    """Why the call page's ``start`` would be refused, checked before the call exists: the very
    options a human call runs with (``call_options``, which applies the site policy).
    ``settings.EVASITE_HUMAN_CALL_CHECK`` names it for voice/ (voice never imports scoring)."""
    choice = AgentChoice(**{key: value for key, value in agent.items() if key in AgentChoice.__dataclass_fields__})
    try:
        call_options(scenario_name=scenario_name, modality=modality, agent=choice)
    except HumanCallError as exc:
        return str(exc)
    return None


async def run_human_call(
    *,
    scenario_name: str,
    owner_id: int,
    modality: str,
    agent: dict[str, Any],
    peer: Any,
    on_turn: Callable[[str, str], None] | None = None,
    on_open: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Run, score and store one call; returns ``run_id``, ``result_id``, ``result_url``,
    ``stop_reason`` and ``is_successful``."""
    choice = AgentChoice(**{key: agent.get(key) for key in ("model", "llm_url", "api_key_name", "url") if agent.get(key)})
    options = call_options(scenario_name=scenario_name, modality=modality, agent=choice)
    try:
        report = await run_evaluation(options, argv=options_argv(options, program=("human-call",)), progress=_TurnSink(on_turn),
                                      source=Run.Source.HUMAN, owner_id=owner_id, on_open=on_open,
                                      user_endpoint=peer)
    except (RunError, OSError) as exc:
        raise HumanCallError(str(exc)) from exc
    except Exception as exc:  # an attempt error (agent setup failed): the run row says failed
        raise HumanCallError(f"the call could not run: {type(exc).__name__}: {exc}") from exc
    result = await sync_to_async(ScenarioResult.objects.get)(run_id=report.run_id, scenario_name=scenario_name,
                                                             trial=1)
    metrics = report.metrics[0]
    return {
        "run_id": report.run_id,
        "result_id": result.pk,
        "result_url": reverse("scoring:result_detail", args=[result.pk]),
        "stop_reason": metrics.get("stop_reason"),
        "is_successful": metrics.get("is_successful"),
    }
