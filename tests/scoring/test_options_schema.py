"""The run options are declared once: the command line's flags, the New-run form's fields (with
their bounds and choices), the recorded command line and validation all come from the schema, and
``--resume TS`` continues a run with the settings it was recorded with."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.runs.options import (
    Limits,
    OptionsError,
    RunOptions,
    add_run_arguments,
    explicit_options,
    option_fields,
    options_argv,
    options_from_mapping,
    validate,
)
from scoring.runs.options.resume_defaults import adopt_recorded
from tests.sqlite_template import migrated_sqlite
from voice.bots.models.catalogue import DEFAULT_MODEL, builtin_names
from tests import warm_python

REPO = Path(__file__).resolve().parents[2]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    return parser


def test_every_declared_option_is_a_flag_and_only_typed_flags_are_explicit() -> None:
    parser = _parser()
    dests = {action.dest for action in parser._actions} - {"help", "list", "list_domains"}
    assert dests == {item.name for item, _ in option_fields()}
    values = vars(parser.parse_args(["--modality", "text", "--trials", "3", "--strict-match", "--scenarios", "a", "b"]))
    assert explicit_options(values) == {"modality", "trials", "strict_match", "scenarios"}
    options = options_from_mapping(values)
    assert (options.modality, options.trials, options.strict_match, options.scenarios) == ("text", 3, True, ["a", "b"])
    assert options.concurrency == RunOptions().concurrency  # untyped flags keep their defaults


def test_recorded_argv_parses_back_to_the_same_options_without_the_secret() -> None:
    options = RunOptions(scenarios=["x", "y"], modality="text", trials=2, duration=30, strict_match=True,
                         judge_url="http://127.0.0.1:9/v1/chat/completions", judge_model="m", judge_api_key="sk-live")
    argv = options_argv(options)
    assert argv[:2] == ["manage.py", "run_eval"] and "sk-live" not in argv
    parsed = options_from_mapping(vars(_parser().parse_args(argv[2:])))
    assert parsed.judge_api_key == "<redacted>"
    parsed.judge_api_key = options.judge_api_key
    assert parsed == options
    assert options_argv(RunOptions(), program=("human-call",)) == ["human-call"]


@pytest.mark.parametrize(("field", "value", "message"), [
    ("trials", 10**23, "--trials must be <= 100"),
    ("trials", 0, "--trials must be >= 1"),
    ("concurrency", 65, "--concurrency must be <= 64"),
    ("duration", 10**9, "--duration must be <= 3600"),
    ("inactivity_timeout", float("inf"), "--inactivity-timeout must be a finite number"),
    ("judge_timeout", 1e30, "--judge-timeout must be <= 3600"),
    ("max_auto_retries", 1000, "--max-auto-retries must be <= 10"),
    ("trials", 2.5, "--trials must be an integer"),
    ("modality", "video", "--modality must be one of voice, text"),
])
def test_every_number_has_an_upper_bound_and_a_type(field: str, value: object, message: str) -> None:
    with pytest.raises(OptionsError, match=message.replace("+", r"\+")):
        validate(RunOptions(**{"modality": "text", field: value}))


def test_limits_are_the_operators_and_bound_scenarios_times_trials() -> None:
    validate(RunOptions(modality="text", trials=100))
    with pytest.raises(OptionsError, match="--trials must be <= 5"):
        validate(RunOptions(modality="text", trials=6), limits=Limits(trials=5))
    # The whole catalogue (50) × 3 trials = 150 attempts, over a limit of 100.
    with pytest.raises(OptionsError, match="150 attempts"):
        validate(RunOptions(modality="text", trials=3), limits=Limits(attempts=100))


def test_built_in_models_come_from_one_table() -> None:
    assert builtin_names("agent")[0] == DEFAULT_MODEL["agent"] == RunOptions().agent_model
    assert builtin_names("user") == (DEFAULT_MODEL["user"],) == (RunOptions().user_model,)
    assert {"gold-replay", "null"} <= set(builtin_names("agent"))


def test_resume_inherits_untyped_flags_and_reports_typed_differences() -> None:
    recorded = RunOptions(scenarios=["a", "b"], modality="text", concurrency=2, judge_api_key="sk").redacted()
    resumed = RunOptions(resume="20260101_000000", concurrency=1)
    report = adopt_recorded(resumed, {"resume", "concurrency"}, recorded)
    assert (resumed.modality, resumed.scenarios, resumed.concurrency) == ("text", ["a", "b"], 1)
    assert resumed.judge_api_key is None  # an inline key is never stored, so never restored
    assert report.inherited == {"scenarios": ["a", "b"], "modality": "text"}
    assert report.overridden == ["--concurrency: recorded=2 now=1"]
    assert report.unrecoverable == ["--judge-api-key"]


def _run_eval(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return warm_python.run([sys.executable, "manage.py", "run_eval", *args], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=300)


@pytest.mark.slow(seconds=20)
def test_cli_resume_alone_keeps_the_modality_selection_and_concurrency(tmp_path: Path) -> None:
    """The issue's case: a text run at --concurrency 2 resumed with `--resume TS` alone must not
    run the rest in voice at concurrency 1."""
    env = {**os.environ, "EVASITE_SQLITE_PATH": str(tmp_path / "db.sqlite3")}
    migrated_sqlite(tmp_path / "db.sqlite3")
    names = ["eva_airline__1_1_3", "eva_airline__1_1_4"]
    first = _run_eval("--output-dir", str(tmp_path), "--modality", "text", "--concurrency", "2",
                      "--agent-model", "gold-replay", "--scenarios", *names, env=env)
    assert first.returncode == 0, first.stderr
    session = next(tmp_path.glob("eval_*"))
    stamp = session.name.removeprefix("eval_")
    (session / names[1] / "metrics.json").unlink()  # as if killed before the second finished
    resumed = _run_eval("--output-dir", str(tmp_path), "--resume", stamp, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert f"Resuming eval_{stamp} with its recorded settings" in resumed.stdout
    invocations = json.loads((session / "run_args.json").read_text())["invocations"]
    last = invocations[-1]["parsed_args"]
    assert (last["modality"], last["concurrency"], last["scenarios"], last["agent_model"]) == \
        ("text", 2, names, "gold-replay")
    assert json.loads((session / names[1] / "metrics.json").read_text())["is_successful"] is True
    overridden = _run_eval("--output-dir", str(tmp_path), "--resume", stamp, "--concurrency", "1", env=env)
    assert overridden.returncode == 0, overridden.stderr
    assert "overridden on the command line: --concurrency: recorded=2 now=1" in overridden.stdout


def test_concurrency_and_processes_not_given_follow_the_cores_and_the_modality(monkeypatch) -> None:
    from scoring.runs.options.entry import TEXT_SCENARIOS_PER_CORE, VOICE_CALLS_PER_CORE, resolve_defaults

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    resolved = {}
    for label, options, forkable in (
            ("voice", RunOptions(), True), ("text", RunOptions(modality="text"), True),
            ("text, no fork", RunOptions(modality="text"), False),
            ("text on celery", RunOptions(modality="text", executor="celery"), True),
            ("bot url", RunOptions(modality="text", agent_url="ws://127.0.0.1:9/"), True),
            ("llm url", RunOptions(modality="text", user_llm_url="http://127.0.0.1:9/v1"), True),
            ("judge", RunOptions(modality="text", judge_url="http://127.0.0.1:9/v1"), True),
            ("voice, llm url", RunOptions(agent_llm_url="http://127.0.0.1:9/v1"), True),
            ("given", RunOptions(modality="text", concurrency=7, processes=5), True),
            ("one at a time", RunOptions(modality="text", concurrency=1), True)):
        resolve_defaults(options, forkable=forkable)
        resolved[label] = (options.concurrency, options.processes)
    text = 3 * TEXT_SCENARIOS_PER_CORE
    assert resolved == {
        "voice": (3 * VOICE_CALLS_PER_CORE, 1),  # more processes measured no better in voice
        "text": (text, 3), "text, no fork": (text, 1), "text on celery": (text, 1),
        "bot url": (1, 1), "llm url": (1, 1), "judge": (1, 1), "voice, llm url": (3 * VOICE_CALLS_PER_CORE, 1),
        "given": (7, 5), "one at a time": (1, 1)}
    capped = RunOptions()
    resolve_defaults(capped, Limits(concurrency=2))
    assert capped.concurrency == 2  # the operator's bound holds for a default too
    validate(RunOptions(agent_url="ws://127.0.0.1:9/"))  # not given is never "> 1 with a bot URL"
    with pytest.raises(OptionsError, match="--concurrency > 1 cannot be used"):
        validate(RunOptions(agent_url="ws://127.0.0.1:9/", concurrency=2))
