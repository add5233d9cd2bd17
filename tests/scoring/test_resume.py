"""§16 classification and moving aside, §16.3 soft-check, §17 retry reasons, §18 check_resume."""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from scoring.core import resume as r
from scoring.runs.options.schema import RESUME_COMPARED_FIELDS


def _scenario(root: Path, name: str, metrics: dict | str | None = None, *, context: list | None = None, bridge_log: bool = True) -> Path:
    d = root / name
    d.mkdir(parents=True)
    if bridge_log:
        (d / "bridge_log.txt").write_text("log\n")
    if metrics is not None:
        (d / "metrics.json").write_text(metrics if isinstance(metrics, str) else json.dumps(metrics))
    if context is not None:
        (d / "bot_logs_agent").mkdir()
        (d / "bot_logs_agent" / "llm_context.json").write_text(json.dumps(context))
    return d


def _done(n_calls: int = 5, stop: str | None = "[EXIT]", **extra) -> dict:
    m = {"total_turns": 10, "token_usage": {"agent": {"n_calls": n_calls}}, **extra}
    if stop is not None:
        m["stop_reason"] = stop
    return m


# --- §16.1 --------------------------------------------------------------------------------------


def test_classify_every_reason(tmp_path: Path) -> None:
    assert r.classify(tmp_path / "missing", 3) == ("fresh", "no subdir")
    assert r.classify(_scenario(tmp_path, "a"), 3) == ("in_flight", "no metrics.json (in-flight)")
    state, reason = r.classify(_scenario(tmp_path, "b", "{not json"), 3)
    assert state == "in_flight" and reason.startswith("metrics.json unreadable (") and reason.endswith(")")
    assert r.classify(_scenario(tmp_path, "b2", "[1, 2]"), 3) == ("in_flight", "metrics.json unreadable (metrics.json is not a JSON object)")
    assert r.classify(_scenario(tmp_path, "c", {"stop_reason": "[EXIT]"}), 3) == ("in_flight", "0 turns (bot crashed before audio)")
    assert r.classify(_scenario(tmp_path, "d", {"total_turns": 0}), 3) == ("in_flight", "0 turns (bot crashed before audio)")
    assert r.classify(_scenario(tmp_path, "e", _done(1, "[INACTIVITY_TIMEOUT]")), 3) == (
        "in_flight",
        "1 agent LLM response(s) < 3 ([INACTIVITY_TIMEOUT])",
    )
    assert r.classify(_scenario(tmp_path, "f", _done(2, None)), 3) == ("in_flight", "2 agent LLM response(s) < 3 (?)")
    assert r.classify(_scenario(tmp_path, "g", _done(5, "[TIMEOUT]")), 3) == ("completed", "[TIMEOUT]")
    assert r.classify(_scenario(tmp_path, "h", _done(5, None)), 3) == ("completed", "?")


def test_classify_uses_context_fallback_and_min_zero(tmp_path: Path) -> None:
    d = _scenario(tmp_path, "x", _done(0, "[EXIT]"), context=[{"role": "assistant"}] * 4)
    assert r.classify(d, 3) == ("completed", "[EXIT]")
    assert r.classify(d, 5) == ("in_flight", "4 agent LLM response(s) < 5 ([EXIT])")
    stalled = _scenario(tmp_path, "y", _done(1))
    assert r.classify(stalled, 0) == ("completed", "[EXIT]")
    # Unknown count (no n_calls, no context): the rule is skipped.
    assert r.classify(_scenario(tmp_path, "z", {"total_turns": 3, "stop_reason": "[EXIT]"}), 3) == ("completed", "[EXIT]")


# --- moving aside -------------------------------------------------------------------------------


def test_move_aside_for_resume(tmp_path: Path) -> None:
    d = _scenario(tmp_path, "eva_airline__1_1_2", _done())
    target = r.move_aside(d, "20260317_101500")
    assert target == tmp_path / "eva_airline__1_1_2.killed.20260317_101500"
    assert not d.exists()
    assert (target / "__KILLED__").is_file() and (target / "__KILLED__").read_bytes() == b""
    assert (target / "metrics.json").exists()


def test_move_aside_for_autoretry_never_overwrites_an_earlier_one(tmp_path: Path) -> None:
    when = datetime(2026, 3, 17, 9, 5, 7)
    assert r.autoretry_suffix(2, when) == "autoretry2.20260317_090507"
    d = _scenario(tmp_path, "s", None)
    target = r.move_aside(d, r.autoretry_suffix(1, when))
    assert target.name == "s.killed.autoretry1.20260317_090507" and (target / "__KILLED__").exists()
    # The same name again (two resumes in one second): the earlier evidence stays, the new one is _2.
    _scenario(tmp_path, "s", {"marker": "second"})
    again = r.move_aside(tmp_path / "s", r.autoretry_suffix(1, when))
    assert again.name == "s.killed.autoretry1.20260317_090507_2" and (again / "__KILLED__").exists()
    assert (again / "metrics.json").exists() and not (target / "metrics.json").exists()
    assert not (tmp_path / "s").exists()


# --- §16.3 --------------------------------------------------------------------------------------


def test_resume_mismatches() -> None:
    previous = {"domain": "eva_airline", "duration": None, "judge_threshold": 0.9, "conversation_end_policy": "tool-only",
                "output_dir": "a", "judge_url": "http://x", "scenarios": None}
    current = {"domain": "eva_airline", "duration": 600, "judge_threshold": 0.9, "conversation_end_policy": "valid-terminal-state",
               "output_dir": "b", "judge_url": "http://x", "scenarios": None, "trials": 3}
    mismatches = r.resume_mismatches(previous, current, RESUME_COMPARED_FIELDS)
    assert mismatches == ["duration: original=None resume=600", "conversation_end_policy: original=tool-only resume=valid-terminal-state"]
    warning = r.format_resume_warning(mismatches)
    assert warning.splitlines()[1:] == ["  duration: original=None resume=600", "  conversation_end_policy: original=tool-only resume=valid-terminal-state"]
    assert "different settings" in warning.splitlines()[0]
    assert r.format_resume_warning([]) is None
    # harness.md §16.3's list, with the project's additions, is what the options declare as compared.
    assert set(RESUME_COMPARED_FIELDS) == {
        "domain", "scenarios", "duration", "judge_url", "judge_model", "judge_threshold", "judge_max_tokens",
        "judge_temperature", "judge_top_p", "judge_seed", "strict_match", "conversation_end_policy",
        "inactivity_timeout", "modality", "agent_model", "agent_llm_url", "user_model", "user_llm_url", "trials",
        "conditions"}


# --- §17 ----------------------------------------------------------------------------------------


def test_retry_reason_table(tmp_path: Path) -> None:
    err = ConnectionRefusedError("agent down")
    assert r.retry_reason(error=err) == "attempt error: ConnectionRefusedError: agent down"
    assert r.retry_reason(error=err, stale_retry=False) is None
    assert r.retry_reason(metrics={"total_turns": 0}) == "0 conversation turns (bots never exchanged audio)"
    assert r.retry_reason(metrics={"total_turns": 0}, stale_retry=False) is None
    stalled = _done(1)
    assert r.retry_reason(metrics=stalled, min_agent_turns=3) is None  # flag off
    assert r.retry_reason(metrics=stalled, retry_insufficient_turns=True, min_agent_turns=3) == "1 agent LLM response(s) < 3 (insufficient agent turns)"
    assert r.retry_reason(metrics=stalled, retry_insufficient_turns=True, min_agent_turns=0) is None
    assert r.retry_reason(metrics=_done(5), retry_insufficient_turns=True, min_agent_turns=3) is None
    # A disabled stale row does not hide an enabled stall row.
    zero = {"total_turns": 0, "token_usage": {"agent": {"n_calls": 0}}}
    assert r.retry_reason(metrics=zero, stale_retry=False, retry_insufficient_turns=True, min_agent_turns=3) == (
        "0 agent LLM response(s) < 3 (insufficient agent turns)"
    )
    # Context fallback through scenario_dir.
    d = _scenario(tmp_path, "c", None, context=[{"role": "assistant"}] * 2)
    assert r.retry_reason(metrics={"total_turns": 4}, scenario_dir=d, retry_insufficient_turns=True, min_agent_turns=3) == (
        "2 agent LLM response(s) < 3 (insufficient agent turns)"
    )


def test_disconnected_before_agent_turn_is_stale() -> None:
    only_user = {"total_turns": 1, "stop_reason": "[DISCONNECTED]", "turns": [{"role": "user", "text": "hi"}]}
    assert r.retry_reason(metrics=only_user) == "[DISCONNECTED] before the agent's first turn"
    spoke = {**only_user, "turns": [{"role": "user"}, {"role": "agent"}], "total_turns": 2}
    assert r.retry_reason(metrics=spoke) is None


# --- §18 ----------------------------------------------------------------------------------------


def _session(tmp_path: Path) -> Path:
    root = tmp_path / "eval_20260317_100000"
    root.mkdir()
    for name in ("evaluation_log.txt", "all_summary.txt", "run_args.json"):
        (root / name).write_text("x")
    _scenario(root, "eva_airline__1_1_2", _done(6))
    _scenario(root, "eva_airline__1_1_3", _done(1, "[INACTIVITY_TIMEOUT]"))
    _scenario(root, "eva_airline__1_1_4", None)
    _scenario(root, "eva_airline__1_1_5", _done(4, auto_retry_count=2, auto_retry_reasons=["0 conversation turns (bots never exchanged audio)", "attempt error: OSError: boom"]))
    _scenario(root, "eva_airline__1_2_1", {"total_turns": 0, "auto_retry_count": 1, "auto_retry_reasons": ["x"]})
    _scenario(root, "eva_airline__1_1_2.killed.20260317_090000", _done(6))
    _scenario(root, "eva_airline__1_1_5.killed.autoretry1.20260317_100500", {"total_turns": 0})
    (root / "__KILLED__").mkdir()
    (root / "stray_dir").mkdir()  # no marker file: skipped
    return root


def test_check_resume_report_with_retries(tmp_path: Path) -> None:
    root = _session(tmp_path)
    assert r.check_resume_report(root, 3) == (
        f"Eval dir : {root}\n"
        "Min agent turns: 3\n"
        "Total scenarios: 5  (2 completed, 3 would re-run, 0 fresh)\n"
        "\n"
        "Would re-run (3):\n"
        "  eva_airline__1_1_3  [1 agent LLM response(s) < 3 ([INACTIVITY_TIMEOUT])]\n"
        "  eva_airline__1_1_4  [no metrics.json (in-flight)]\n"
        "  eva_airline__1_2_1  [0 turns (bot crashed before audio); already auto-retried 1x in-run]\n"
        "\n"
        "Completed after automatic in-run retry (1):\n"
        "  eva_airline__1_1_5  [auto-retried 2x in-run: 0 conversation turns (bots never exchanged audio); attempt error: OSError: boom]\n"
    )


def test_check_resume_report_default_min_zero_and_complete(tmp_path: Path) -> None:
    root = tmp_path / "eval_x"
    root.mkdir()
    _scenario(root, "a__1", _done(1))
    (root / "b__1" / "scenario_config").mkdir(parents=True)
    (root / "b__1" / "metrics.json").write_text(json.dumps(_done(9, "[SIMULATOR_EXIT]")))
    assert r.check_resume_report(root, 0) == (
        f"Eval dir : {root}\n"
        "Min agent turns: 0\n"
        "Total scenarios: 2  (2 completed, 0 would re-run, 0 fresh)\n"
        "\n"
        "All scenarios are complete — nothing to resume.\n"
    )


def test_check_resume_is_read_only_and_rejects_files(tmp_path: Path) -> None:
    root = _session(tmp_path)
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    r.check_resume_report(root, 3)
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before
    with pytest.raises(NotADirectoryError):
        r.check_resume_report(root / "evaluation_log.txt", 0)
