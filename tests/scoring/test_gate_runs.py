"""The gate on real runs of the built-in models (text modality, a few seconds each): the baseline
read back by timestamp, row id and directory, the verdict, the JUnit and Markdown files, and
``manage.py noise_floor``. Gold replay passes every scenario; the null agent fails these five."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from junitparser import Failure, JUnitXml

from scoring.runs.baseline import RunNotFound, load_run
from scoring.runs.finish import EXIT_ERROR, EXIT_FINISHED, EXIT_REGRESSION, finish_report, open_baseline
from scoring.runs.options import OptionsError, RunOptions, validate
from scoring.runs.runner import RunError, run_evaluation

FIVE = ["eva_airline__voluntary_date_change", "eva_airline__1_1_3", "eva_airline__2_1_2",
        "eva_airline__3_1_5", "eva_airline__4_2_5"]


async def _run(out: Path, agent: str = "gold-replay", trials: int = 1, scenarios: list[str] = FIVE):
    options = RunOptions(scenarios=list(scenarios), modality="text", concurrency=4, trials=trials,
                         agent_model=agent, output_dir=str(out))
    return await run_evaluation(options)


def _finish(report, out: Path, *, trials: int = 1, environ=None, **gate):
    """The command's finish step with gate flags ``gate`` (and the run's own settings)."""
    options = RunOptions(output_dir=str(out), trials=trials, modality="text", **gate)
    return finish_report(report, options, baseline=open_baseline(options),
                         environ=environ if environ is not None else {})


@pytest.mark.django_db(transaction=True)
async def test_gold_baseline_against_the_null_agent_is_a_regression(tmp_path: Path) -> None:
    gold = await _run(tmp_path)
    null = await _run(tmp_path, agent="null")
    junit, markdown = tmp_path / "reports" / "junit.xml", tmp_path / "summary.md"
    done = await sync_to_async(_finish)(null, tmp_path, baseline=gold.session_dir.name.removeprefix("eval_"),
                                        fail_on_regression=True, junit_xml=str(junit), summary_md=str(markdown))

    assert done.exit_code == EXIT_REGRESSION and done.verdict is not None and done.verdict.regression
    assert done.lines[0] == f"Baseline {gold.session_dir.name}: 5 scenario(s) in common, 1 trial(s) each"
    assert "  Pass rate: 100.00% (5/5) → 0.00% (0/5), -100.00 points" in done.lines[1]
    assert "p = 0.0312 (exact)" in done.lines[2]  # McNemar: 5 of 5 discordant pairs went down, 1/32
    assert "Gate: REGRESSION at α = 0.05" in done.lines
    assert sorted(s.name for s in done.verdict.broken) == sorted(FIVE)

    xml = JUnitXml.fromfile(str(junit))
    assert (xml.tests, xml.failures, xml.errors) == (5, 5, 0)
    cases = {f"{case.classname}.{case.name}": case for suite in xml for case in suite}
    assert "eva_airline.1.x.voluntary_date_change" in cases and "eva_airline.1.x.1_1_3" in cases
    for case in cases.values():
        (failure,) = case.result
        assert isinstance(failure, Failure) and failure.type == "db_state_match"
        assert failure.message.startswith("stop reason: [EXIT]; failed signals: db_state_match; DB diff: ")
        assert "no difference" not in failure.message
        assert case.time > 0
    # The null agent never acts: the gold database has a change the final one lacks.
    assert "reservations:" in cases["eva_airline.1.x.voluntary_date_change"].result[0].message

    text = markdown.read_text(encoding="utf-8")
    assert f"Baseline `{gold.session_dir.name}`" in text and "**Gate: regression** at α = 0.05" in text
    assert "| Pass rate | 0.00% (0/5), 95% CI [0.00%, 43.45%] | 100.00% (5/5), 95% CI [56.55%, 100.00%] |" in text
    assert text.count("| `eva_airline__") == 5  # the five flips


@pytest.mark.django_db(transaction=True)
async def test_gold_against_gold_passes_and_baselines_resolve_every_way(tmp_path: Path) -> None:
    first = await _run(tmp_path)
    second = await _run(tmp_path)
    for reference in (str(first.session_dir), first.session_dir.name, str(first.run_id)):
        summary = tmp_path / "step_summary.md"
        summary.write_text("earlier step\n")
        done = await sync_to_async(_finish)(second, tmp_path, baseline=reference, fail_on_regression=True,
                                            environ={"GITHUB_STEP_SUMMARY": str(summary)})
        assert done.exit_code == EXIT_FINISHED, (reference, done.lines, done.notices)
        assert "Gate: no regression at α = 0.05" in done.lines
        assert summary.read_text().startswith("earlier step\n### evasite: ")  # appended, as GitHub expects
    stored = await sync_to_async(load_run)(str(first.run_id), output_dir=tmp_path)
    assert stored.label == first.session_dir.name and stored.read_from == "metrics files"
    assert [m["scenario_name"] for m in stored.metrics] == FIVE  # queue order


@pytest.mark.django_db(transaction=True)
async def test_a_baseline_whose_directory_is_gone_is_read_from_its_rows(tmp_path: Path) -> None:
    gold = await _run(tmp_path / "a")
    null = await _run(tmp_path / "b", agent="null")
    moved = tmp_path / "elsewhere"
    gold.session_dir.rename(moved)
    stored = await sync_to_async(load_run)(str(gold.run_id), output_dir=tmp_path / "a")
    assert stored.read_from == "rows" and stored.session_dir is None and len(stored.metrics) == 5
    done = await sync_to_async(_finish)(null, tmp_path, baseline=str(gold.run_id), fail_on_regression=True)
    assert done.exit_code == EXIT_REGRESSION


@pytest.mark.slow(seconds=45)
@pytest.mark.django_db(transaction=True)
async def test_a_one_scenario_flip_on_three_trials_is_not_a_regression(tmp_path: Path) -> None:
    # The baseline: the null agent on 3 trials, where one trial of one scenario once passed.
    baseline = await _run(tmp_path, agent="null", trials=3)
    flipped = baseline.session_dir / f"{FIVE[0]}__trial2" / "metrics.json"
    metrics = json.loads(flipped.read_text())
    metrics.update(is_successful=True, is_task_successful=True, db_state_match=True)
    flipped.write_text(json.dumps(metrics))
    run = await _run(tmp_path, agent="null", trials=3)
    done = await sync_to_async(_finish)(run, tmp_path, trials=3, baseline=str(baseline.session_dir),
                                        fail_on_regression=True)
    assert done.exit_code == EXIT_FINISHED, done.lines
    assert done.lines[0].endswith("5 scenario(s) in common, 3 trial(s) each")
    assert f"  Fewer passes (1): {FIVE[0]} 1/3 → 0/3" in done.lines
    assert "Gate: no regression at α = 0.05" in done.lines

    out = io.StringIO()
    await sync_to_async(call_command)("noise_floor", str(baseline.session_dir), stdout=out)
    printed = out.getvalue().splitlines()
    assert printed[0] == f"Noise floor of {baseline.session_dir.name}: 5 scenario(s), up to 3 trial(s) each (5 with at least 2)"
    assert printed[1] == "Pass rate per trial: trial 1 0.00% (0/5), trial 2 20.00% (1/5), trial 3 0.00% (0/5)"
    assert f"  {FIVE[0]}: 1/3 passed" in printed
    # One scenario at 1/3: p(1-p) estimate 1*2/(3*2) = 1/3; SD = sqrt(1/3)/5 = 11.55 points.
    assert "Run-to-run SD of the pass rate: 11.55 points at 1 trial per scenario, 6.67 points at 3" in printed


@pytest.mark.django_db(transaction=True)
async def test_wrong_baselines_and_flags_are_refused_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="--baseline 19990101_000000: no such run"):
        await sync_to_async(open_baseline)(RunOptions(baseline="19990101_000000", output_dir=str(tmp_path)))
    with pytest.raises(RunNotFound, match="not a session directory, a timestamp"):
        await sync_to_async(load_run)("yesterday", output_dir=tmp_path)
    with pytest.raises(OptionsError, match="--fail-on-regression needs --baseline"):
        validate(RunOptions(modality="text", fail_on_regression=True))
    with pytest.raises(OptionsError, match="--regression-alpha must be <= 0.5"):
        validate(RunOptions(modality="text", baseline="x", regression_alpha=0.9))
    # A baseline with nothing in common cannot pass a gate.
    other = await _run(tmp_path, scenarios=["eva_airline__5_1_3"])
    run = await _run(tmp_path, scenarios=FIVE[:1])
    done = await sync_to_async(_finish)(run, tmp_path, baseline=str(other.session_dir), fail_on_regression=True)
    assert done.exit_code == EXIT_ERROR and done.notices == [
        f"run_eval: error: --baseline {other.session_dir.name}: the run and the baseline share no scored "
        "scenario trial; nothing to gate on"]
    told = await sync_to_async(_finish)(run, tmp_path, baseline=str(other.session_dir))
    assert told.exit_code == EXIT_FINISHED and told.notices[0].startswith("run_eval: warning: --baseline ")
