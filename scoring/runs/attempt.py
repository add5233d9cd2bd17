"""One attempt of one scenario (harness.md §3.2): run the bridge session, write the scenario's
artifacts, score it and write ``metrics.json`` last (its presence marks the attempt complete)."""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from scenarios.contract import EvalScenario
from scoring.core import artifacts_text
from scoring.core.canonical import db_hash
from scoring.core.files import read_json, write_json, write_text_atomic
from scoring.core.metrics_builder import build_metrics
from scoring.core.signals import is_action_match as action_match_verdict
from scoring.core.turn_taking import turn_taking
from voice.bridge.config import BridgeConfig
from voice.bridge.endpoints import PeerEndpoint
from voice.bridge.engine import SessionInputs, SessionOutcome, run_session
from voice.conditions import Condition
from voice.listen.tap import open_tap
from voice.peers import PeerSpec, build_endpoint


@dataclass
class AttemptSettings:
    """Everything an attempt needs besides the scenario (derived once per run from the options)."""

    agent: PeerSpec
    user: PeerSpec
    bridge: BridgeConfig
    policy: str
    inactivity_timeout: float
    min_agent_turns: int
    strict_match: bool = False
    judge: Any = None  # scoring.core.judge.JudgeConfig or None
    on_turn: Callable[[str, str, str], None] | None = None
    user_endpoint: PeerEndpoint | None = None
    """A live user peer (a human tester's call) used instead of building one from ``user``."""
    condition: Condition | None = None
    """The ``--conditions`` entry this attempt runs under (its audio is built afresh per attempt;
    its speaker settings are already in ``user``); None in a run without conditions."""


@dataclass
class AttemptOutcome:
    metrics: dict[str, Any] | None
    final_db: dict[str, Any] | None = None
    error: BaseException | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def session_inputs(scenario: EvalScenario) -> SessionInputs:
    """Prompts, tool maps and initial shared state of both sides (§3.2 steps 3–4)."""
    return SessionInputs(
        user_prompt=scenario.get_user_prompt(),
        user_tools_json=scenario.get_user_tools(),
        agent_prompt=scenario.get_agent_prompt(),
        agent_tools_json=scenario.get_agent_tools(),
        tool_domain=scenario.domain,
        agent_shared_state_init=scenario.setup_shared_state({}, "agent") or {},
        user_shared_state_init=scenario.setup_shared_state({}, "user") or {},
    )


def expected_hash_of(scenario: EvalScenario) -> str | None:
    expected = getattr(scenario, "expected_scenario_db", None)
    return db_hash(expected) if expected else None


async def run_attempt(
    scenario: EvalScenario,
    scenario_dir: Path,
    settings: AttemptSettings,
    *,
    auto_retry_count: int,
    auto_retry_reasons: list[str],
    trial: int | None,
    label: str | None = None,
) -> AttemptOutcome:
    """Run and score one attempt. Any exception (in the session or while scoring it) is returned
    as the attempt's error, so the retry loop of harness.md §17 decides what happens next.

    ``label`` names the attempt in progress events (``<scenario>__trial<k>`` with trials)."""
    scenario_dir.mkdir(parents=True, exist_ok=True)
    expected_hash = expected_hash_of(scenario)
    scenario.save(scenario_dir / "scenario_config", expected_db_hash=expected_hash)
    _record_run_setup(scenario_dir / "scenario_config" / "metadata.json", settings)
    header_time = datetime.now().isoformat()
    # §3.2 step 1: the log's header exists from the start; the full file keeps it as written.
    write_text_atomic(scenario_dir / "conversation_log.txt", artifacts_text.format_conversation_log_header(header_time))
    with open(scenario_dir / "bridge_log.txt", "w", encoding="utf-8") as bridge_log:

        def log(line: str) -> None:
            bridge_log.write(line.rstrip("\n") + "\n")
            bridge_log.flush()

        def on_event(event: dict[str, Any]) -> None:
            if event.get("type") == "turn" and settings.on_turn is not None:
                settings.on_turn(label or scenario.name, str(event.get("role")), str(event.get("text")))

        started = time.monotonic()
        try:
            conditions = await _fresh_audio_conditions(settings, label or scenario.name)
            with open_tap(settings.bridge.live_key, settings.bridge.modality) as tap:  # listening in
                outcome = await run_session(
                    scenario_inputs=session_inputs(scenario),
                    agent=build_endpoint(settings.agent, modality=settings.bridge.modality),
                    user=settings.user_endpoint or build_endpoint(settings.user, modality=settings.bridge.modality),
                    config=settings.bridge,
                    on_event=on_event,
                    log=log,
                    tap=tap,
                    conditions=conditions,
                )
            final_db, actual_hash, disagreement = _final_state(outcome, agent_in_process=settings.agent.in_process)
            _write_session_artifacts(scenario, scenario_dir, outcome, final_db, header_time)
            figures = _turn_taking(scenario_dir, outcome)
            # §3.2: from just before the conversation connections to just after the artifacts.
            scenario_duration = time.monotonic() - (outcome.conversation_started or started)
            judge_result = await _judge(settings, scenario, scenario_dir, outcome)
            metrics = build_metrics(
                scenario_name=scenario.name,
                scenario_dir=scenario_dir,
                outcome=outcome,
                scenario_duration=scenario_duration,
                success_signals=list(scenario.success_signals),
                policy=settings.policy,
                inactivity_timeout=settings.inactivity_timeout,
                min_agent_turns=settings.min_agent_turns,
                expected_hash=expected_hash,
                actual_hash=actual_hash,
                db_hash_disagreement=disagreement,
                is_action_match=_action_match(scenario, scenario_dir, settings.strict_match),
                judge=judge_result,
                judge_threshold=settings.judge.threshold if settings.judge is not None else None,
                auto_retry_count=auto_retry_count,
                auto_retry_reasons=auto_retry_reasons,
                trace_metrics=_trace_metrics(scenario_dir),
                key_entity_accuracy=_key_entity_accuracy(scenario, outcome, settings.bridge.modality),
                trial=trial,
                condition=settings.condition.name if settings.condition is not None else None,
                turn_taking=figures,
            )
        except Exception as exc:  # an attempt error: the retry loop decides what happens next
            log(f"attempt error: {type(exc).__name__}: {exc}")
            return AttemptOutcome(metrics=None, error=exc)
    # Written last and atomically: its presence is what marks the attempt complete for resume.
    write_json(scenario_dir / "metrics.json", metrics)
    return AttemptOutcome(metrics=metrics, final_db=final_db)


def _final_state(outcome: SessionOutcome, *, agent_in_process: bool
                 ) -> tuple[dict | None, str | None, dict | None]:
    """The agent's final DB, the hash that is scored (harness.md §11.2) and, for a protocol
    agent whose returned DB does not hash to the hash it reported, that disagreement.

    Hashed here for the built-in agent; as reported by a protocol agent, but checked against
    its DB when it sends one, so a lying bot cannot pass ``db_state_match``."""
    final_db = outcome.agent_final_db if isinstance(outcome.agent_final_db, dict) else None
    if agent_in_process:
        return final_db, db_hash(final_db) if final_db else None, None
    summary = outcome.merged_summary or {}
    reported = summary.get("db_hash")
    reported = reported if isinstance(reported, str) and reported else None
    computed = db_hash(final_db) if final_db else None
    if reported is not None and computed is not None and computed != reported:
        return final_db, reported, {"reported": reported, "computed": computed}
    return final_db, reported, None


def _write_session_artifacts(
    scenario: EvalScenario, scenario_dir: Path, outcome: SessionOutcome, final_db: dict | None, header_time: str
) -> None:
    """The per-scenario files of harness.md §14.2 (metrics.json excepted)."""
    write_json(
        scenario_dir / "final_agent_response.json",
        artifacts_text.final_agent_response(outcome.merged_summary, outcome.final_responses),
    )
    summary = outcome.merged_summary or {}
    hashes = artifacts_text.format_final_db_hash_txt(summary.get("db_hash"), summary.get("user_db_hash"))
    if hashes is not None:
        write_text_atomic(scenario_dir / "final_scenario_db_hash.txt", hashes)
    if final_db is not None:
        # Project addition: lets a resumed run restore the stored final DB for the diff page.
        write_json(scenario_dir / "final_scenario_db.json", final_db)
    write_text_atomic(
        scenario_dir / "conversation_log.txt",
        artifacts_text.format_conversation_log(
            outcome.segments, header_time, outcome.end_time_iso, outcome.stop_reason
        ),
    )
    if outcome.segments:
        write_json(scenario_dir / "conversation_log.seglst.json",
                   artifacts_text.seglst_entries(outcome.segments, scenario.name))
    if outcome.recording is not None:
        outcome.write_wav(scenario_dir / "conversation_log.wav")
    write_json(scenario_dir / "bot_logs_agent" / "llm_context.json", outcome.agent_context or [])
    if outcome.user_context is not None:
        write_json(scenario_dir / "bot_logs_user" / "llm_context.json", outcome.user_context)


def _action_match(scenario: EvalScenario, scenario_dir: Path, strict: bool) -> bool | str:
    reference = scenario_dir / "scenario_config" / scenario.reference_file
    prediction = scenario_dir / "final_agent_response.json"
    return action_match_verdict(
        reference,
        prediction,
        ignore_capitalization=bool(scenario.ignore_capitalization),
        ignore_punctuation=bool(scenario.ignore_punctuation),
        disallow_extra_items=bool(scenario.disallow_extra_items) or strict,
    )


def _trace_metrics(scenario_dir: Path) -> Any:
    for path in (scenario_dir / "trace_metrics.json", scenario_dir / "bot_logs_agent" / "trace_metrics.json"):
        if path.exists():
            try:
                return read_json(path)
            except (OSError, ValueError):
                return None
    return None


def _record_run_setup(metadata_path: Path, settings: AttemptSettings) -> None:
    """Add to metadata.json what the attempt ran under: in voice the speech stack (TTS, STT,
    Whisper model and its sha256), and the condition (enough to rebuild it: its spec) with the
    voice the passenger spoke with under it."""
    additions: dict[str, Any] = {}
    if settings.bridge.modality == "voice":
        from voice.speech.description import speech_description

        additions["speech"] = speech_description()
    if settings.condition is not None:
        from voice.speech.registry import passenger_tts_name

        additions["condition"] = {**settings.condition.describe(),
                                  "passenger_tts": passenger_tts_name(settings.user.speaker)}
    if additions:
        write_json(metadata_path, {**read_json(metadata_path), **additions}, indent=4)


async def _fresh_audio_conditions(settings: AttemptSettings, stream: str) -> dict[str, Any]:
    """The attempt's own audio conditions (seeded by its name, so a rerun hears the same line),
    their filters and noise built off the event loop before the call starts."""
    if settings.condition is None:
        return {}
    from voice.conditions import prepare

    conditions = settings.condition.audio_conditions(stream=stream)
    rates = {"agent": settings.bridge.agent_in_rate, "user": settings.bridge.user_in_rate}
    for hearer, condition in conditions.items():
        await asyncio.to_thread(prepare, condition, rates[hearer])
    return conditions


def _turn_taking(scenario_dir: Path, outcome: SessionOutcome) -> dict[str, Any] | None:
    """Write ``speech_timeline.json`` and compute the turn-taking figures from it (voice only)."""
    if outcome.speech_timeline is None:
        return None
    write_json(scenario_dir / "speech_timeline.json",
               {"recording_offset_s": outcome.recording_offset, **outcome.speech_timeline})
    return turn_taking(outcome.speech_timeline, outcome.turns, duration_s=outcome.duration_seconds)


def _key_entity_accuracy(scenario: EvalScenario, outcome: SessionOutcome, modality: str) -> dict | None:
    if modality != "voice":
        return None
    from voice.entities import key_entity_accuracy, scenario_entities

    db = scenario.fresh_db() if hasattr(scenario, "fresh_db") else {}
    entities = scenario_entities(db, getattr(scenario, "information_required", {}) or {})
    pairs = [
        {"role": turn.get("role"), "said": turn.get("text", ""), "heard": turn.get("heard")}
        for turn in outcome.turns
    ]
    if not any(pair["heard"] for pair in pairs):
        return None
    return key_entity_accuracy(pairs, entities)


async def _judge(settings: AttemptSettings, scenario: EvalScenario, scenario_dir: Path,
                 outcome: SessionOutcome) -> dict | None:
    """Run the optional judge off the event loop and write ``judge_result.json``."""
    if settings.judge is None:
        return None
    from scoring.core.judge import run_judge

    prediction = read_json(scenario_dir / "final_agent_response.json")
    reference_path = scenario_dir / "scenario_config" / "reference_answer.json"
    reference = read_json(reference_path) if reference_path.exists() else None
    result = await asyncio.to_thread(
        run_judge,
        settings.judge,
        reference=reference,
        prediction=prediction,
        turns=outcome.turns,
        nl_assertions=list(scenario.nl_assertions or []),
        agent_context=outcome.agent_context,
        user_context=outcome.user_context,
    )
    write_json(scenario_dir / "judge_result.json", result)
    return result


def load_final_db(scenario_dir: Path) -> dict | None:
    """The stored final DB of a completed attempt (resume), if it was written."""
    path = scenario_dir / "final_scenario_db.json"
    try:
        value = read_json(path)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
