"""The attempt plan: everything one queued scenario's attempts need (the scenario, its
directory, the peers, the bridge settings with the listen-in key, the judge, the scoring rules),
built by ``plan_attempt`` from the run's options and the queue item. The local executor calls it
in the coordinating process, a Celery worker on the options the task carries; nothing else
builds attempt settings, so an attempt behaves the same wherever it runs (Listen included)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from scenarios.contract import EvalScenario
from scenarios.registry import get_eval_scenario
from scoring.core.judge import JudgeConfig, judge_enabled, resolve_api_key
from scoring.runs.attempt import AttemptSettings
from scoring.runs.executors.base import QueueItem, RunError
from scoring.runs.progress import ProgressSink
from scoring.runs.options import RunOptions, options_from_mapping
from scoring.runs.options.conditions import condition_named
from voice.bridge.config import BridgeConfig
from voice.bridge.endpoints import PeerEndpoint
from voice.peers import PeerSpec


@dataclass(frozen=True)
class AttemptPlan:
    """One queued scenario of one run, ready to be delivered (``executors.delivery``)."""

    run_id: int
    item: QueueItem
    scenario: EvalScenario
    scenario_dir: Path
    options: RunOptions
    settings: AttemptSettings

    @property
    def name(self) -> str:
        """The scenario's directory name, which is also its name in progress events and logs."""
        return self.item.dir_name

    @property
    def trial(self) -> int | None:
        """The trial number written into metrics.json (None for single-trial runs)."""
        return self.item.trial if self.item.trials > 1 else None


def judge_config(options: RunOptions) -> JudgeConfig | None:
    """The judge of harness.md §13, or None when it is off; the key comes from the environment of
    the process that plans the attempt (a worker's own, since keys never travel)."""
    if not judge_enabled(options.judge_url, options.judge_model):
        return None
    key = resolve_api_key(options.judge_api_key, options.judge_api_key_name or "JUDGE_API_KEY")
    return JudgeConfig.from_flags(vars(options), api_key=key)


def bridge_config(options: RunOptions, scenario: EvalScenario, live_key: tuple[int, str] | None) -> BridgeConfig:
    """Bridge settings for one scenario (duration: --duration, else the scenario's max)."""
    duration = options.duration if options.duration is not None else scenario.max_duration
    return BridgeConfig(  # the pause and kick-off delay are 0 in text modality (BridgeConfig knows)
        modality=options.modality,
        duration_seconds=float(duration),
        inactivity_timeout=options.inactivity_timeout,
        conversation_end_policy=options.conversation_end_policy,
        pause=options.pause,
        audio_chunk_seconds=options.audio_chunk_in_seconds,
        recording_rate=options.output_sample_rate,
        live_key=live_key,
    )


def plan_attempt(options: RunOptions, item: QueueItem, *, run_id: int, session_dir: Path, events: ProgressSink,
                 user_endpoint: PeerEndpoint | None = None) -> AttemptPlan:
    """The plan of ``item``: its live turns go to ``events``; the call is registered for Listen
    under (run id, directory name) wherever it runs; ``user_endpoint`` is a human tester's peer."""
    scenario = get_eval_scenario(item.scenario_name)
    condition = condition_named(options.conditions, item.condition)
    if item.condition and condition is None:
        raise RunError(f"{item.dir_name}: condition {item.condition!r} is not in --conditions {options.conditions!r}")
    speaker = condition.speaker if condition is not None and not condition.speaker.is_default else None
    settings = AttemptSettings(
        agent=PeerSpec("agent", url=options.agent_url, model=options.agent_model,
                       llm_url=options.agent_llm_url, api_key_name=options.agent_api_key_name),
        user=PeerSpec("user", url=options.user_url, model=options.user_model,
                      llm_url=options.user_llm_url, api_key_name=options.user_api_key_name, speaker=speaker,
                      barge_in=condition.barge_in if condition is not None else None),
        bridge=bridge_config(options, scenario, (run_id, item.dir_name)),
        policy=options.conversation_end_policy,
        inactivity_timeout=options.inactivity_timeout,
        min_agent_turns=options.min_agent_turns,
        strict_match=options.strict_match,
        judge=judge_config(options),
        on_turn=events.turn,
        user_endpoint=user_endpoint,
        condition=condition,
    )
    return AttemptPlan(run_id=run_id, item=item, scenario=scenario, scenario_dir=Path(session_dir) / item.dir_name,
                       options=options, settings=settings)


ATTEMPT_TASK = "evasite.run_scenario_attempt"
"""The Celery task that carries a ``plan_payload`` (``scoring.tasks``; sent by name)."""


def options_payload(options: RunOptions) -> dict[str, Any]:
    """The run's options as a task carries them (JSON; an inline judge key never travels
    through the broker). Built once per run: every task of the run carries the same."""
    return {**asdict(options), "judge_api_key": None}


def plan_payload(*, run_id: int, session_dir: Path, options: dict[str, Any], item: QueueItem) -> dict[str, Any]:
    """What a Celery task carries to plan ``item`` on a worker (``options``: ``options_payload``)."""
    return {"run_id": run_id, "session_dir": str(session_dir), "item": item.to_payload(), "options": options}


def plan_from_payload(payload: dict[str, Any], events: ProgressSink) -> AttemptPlan:
    """The plan a worker builds from ``plan_payload``'s message."""
    return plan_attempt(options_from_mapping(payload["options"]), QueueItem(**payload["item"]),
                        run_id=int(payload["run_id"]), session_dir=Path(payload["session_dir"]), events=events)
