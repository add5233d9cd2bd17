"""The release gate and its reports, on plain metrics (no Django, no run): the verdict rules,
JUnit XML read back by a real JUnit reader, the Markdown summary and the noise-floor text."""
from __future__ import annotations

from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml, Skipped

from scenarios.registry import scenario_group
from scoring.core.db_diff import diff_summary
from scoring.core.gate import (
    NothingInCommon,
    attempt_verdict,
    compare,
    evaluate,
    scenario_and_trial,
    verdicts_from_metrics,
)
from scoring.core.gate_report import RunFigures, gate_lines, noise_floor_text, summary_markdown
from scoring.core.junit import JUnitContext, junit_xml


def _runs(passes: dict[str, list[bool]]) -> dict[str, dict[int, bool]]:
    return {name: dict(enumerate(trials, 1)) for name, trials in passes.items()}


def _metrics(name: str, ok: bool, trial: int | None = None, **extra) -> dict:
    entry = {"scenario_name": name, "is_successful": ok, "token_usage": {"agent": {"n_calls": 4}},
             "stop_reason": "[EXIT]", "scenario_duration": 2.5,
             "success_breakdown": {"passed": [] if not ok else ["db_state_match"], "failed": [] if ok else ["db_state_match"]}}
    if trial is not None:
        entry["trial"] = trial
    entry.update(extra)
    return entry


# --- verdicts ---------------------------------------------------------------------------------------


def test_attempt_verdicts_follow_the_summary_rules() -> None:
    assert attempt_verdict(_metrics("d__a", True), min_agent_turns=3) is True
    stalled = _metrics("d__a", True, token_usage={"agent": {"n_calls": 1}})
    assert attempt_verdict(stalled, min_agent_turns=3) is False  # a stall is a counted failure
    assert attempt_verdict(stalled, min_agent_turns=0) is True
    assert attempt_verdict({"scenario_name": "d__a", "is_successful": "N/A"}, min_agent_turns=0) is None
    assert scenario_and_trial({"scenario_name": "d__a", "trial": 2}) == ("d__a", 2)
    assert scenario_and_trial({"scenario_name": "d__a__trial3"}) == ("d__a", 3)
    assert scenario_and_trial({"scenario_name": "d__a"}) == ("d__a", 1)
    metrics = [_metrics("d__a", True, 1), _metrics("d__a", False, 2), {"scenario_name": "d__b", "is_successful": "N/A"}]
    assert verdicts_from_metrics(metrics, min_agent_turns=0) == {"d__a": {1: True, 2: False}}


# --- the gate ----------------------------------------------------------------------------------------


def test_fifty_of_fifty_to_forty_is_a_regression() -> None:
    names = [f"d__s{i}" for i in range(50)]
    baseline = _runs({n: [True] for n in names})
    run = _runs({n: [i >= 10] for i, n in enumerate(names)})
    verdict = evaluate(baseline, run)
    c = verdict.comparison
    assert (c.base_passes, c.passes, c.attempts) == (50, 40, 50)
    assert c.paired.exact and c.paired.p_value == pytest.approx(1 / 1024)  # McNemar: ten coins all one way
    assert verdict.paired_significant and verdict.regression
    assert [s.name for s in c.drops] == names[:10] and not c.gains
    assert c.difference.delta == pytest.approx(-0.2) and c.difference.high < 0


def test_three_of_five_to_two_of_five_on_three_trials_is_noise() -> None:
    # Five scenarios at 3 trials; one scenario loses one trial (3/3 -> 2/3), another was flaky.
    baseline = _runs({"d__a": [True] * 3, "d__b": [True] * 3, "d__c": [True, False, True],
                      "d__d": [False] * 3, "d__e": [False] * 3})
    run = _runs({"d__a": [True, False, True], "d__b": [True] * 3, "d__c": [True, False, True],
                 "d__d": [False] * 3, "d__e": [False] * 3})
    verdict = evaluate(baseline, run)
    only = verdict.comparison.drops
    assert [(s.name, s.base_passes, s.passes, s.trials) for s in only] == [("d__a", 3, 2, 3)]
    assert only[0].p_drop == 0.5 and not only[0].broken
    assert verdict.comparison.paired.p_value == 0.5
    assert not verdict.regression and verdict.reasons() == []


def test_a_scenario_that_passed_every_trial_and_now_fails_every_trial_is_a_break() -> None:
    # 3/3 -> 0/3 alone is not significant (Fisher p = 0.05, paired p = 0.5) but is a regression.
    names = ["d__a", "d__b", "d__c", "d__d"]
    baseline = _runs({n: [True] * 3 for n in names})
    run = _runs({"d__a": [False] * 3, **{n: [True] * 3 for n in names[1:]}})
    verdict = evaluate(baseline, run)
    assert not verdict.paired_significant and not verdict.significant
    assert [s.name for s in verdict.broken] == ["d__a"] and verdict.regression
    assert verdict.reasons() == ["1 scenario(s) passed every baseline trial and fail every trial now: d__a"]


def test_one_scenario_collapsing_over_many_trials_is_caught_after_holm() -> None:
    names = [f"d__s{i}" for i in range(20)]
    baseline = _runs({n: [True] * 10 for n in names})
    run = _runs({**{n: [True] * 10 for n in names[1:]}, names[0]: [True, True] + [False] * 8})
    verdict = evaluate(baseline, run)
    (dropped,) = verdict.significant
    # Fisher: C(12,2)/C(20,10) ~ 3.57e-4; Holm over 20 scenarios multiplies the smallest by 20.
    assert dropped.p_drop == pytest.approx(66 / 184756)
    assert dropped.p_drop_holm == pytest.approx(20 * 66 / 184756)
    assert not verdict.paired_significant and not verdict.broken and verdict.regression
    assert "Fisher's exact p = 0.0004, 0.0071 after Holm over 20 scenario(s)" in verdict.reasons()[0]


def test_improvements_and_identical_runs_pass() -> None:
    baseline = _runs({f"d__s{i}": [False] for i in range(10)})
    better = _runs({f"d__s{i}": [True] for i in range(10)})
    assert not evaluate(baseline, better).regression
    assert not evaluate(better, better).regression
    assert evaluate(better, better).comparison.paired.p_value == 1.0


def test_only_shared_scenarios_and_trials_are_compared() -> None:
    baseline = _runs({"d__a": [True] * 5, "d__gone": [True]})
    run = _runs({"d__a": [False, False, False], "d__new": [False]})
    c = compare(baseline, run)
    (a,) = c.scenarios
    assert (a.name, a.trials, a.base_passes, a.passes) == ("d__a", 3, 3, 0)
    assert c.only_in_baseline == ("d__gone",) and c.only_in_run == ("d__new",)
    with pytest.raises(NothingInCommon):
        compare({"d__x": {1: True}}, {"d__y": {1: True}})
    with pytest.raises(ValueError):
        evaluate(baseline, run, alpha=0)


def test_alpha_moves_the_line() -> None:
    # Five pass->fail flips on one trial: McNemar p = 1/32 = 0.031 (and five breaks).
    baseline = _runs({f"d__s{i}": [True] for i in range(5)})
    run = _runs({f"d__s{i}": [False] for i in range(5)})
    assert evaluate(baseline, run, alpha=0.05).paired_significant
    assert not evaluate(baseline, run, alpha=0.01).paired_significant
    assert evaluate(baseline, run, alpha=0.01).regression  # still five breaks


# --- reports -----------------------------------------------------------------------------------------


def test_scenario_group_and_db_diff_summary() -> None:
    assert scenario_group("1.1.2") == "1.x" and scenario_group(None) == "other" and scenario_group("x") == "other"
    diff = {"tables_added": [], "tables_removed": ["old"],
            "tables_modified": {"reservations": {"records_added": [], "records_removed": [],
                                                 "records_modified": {"ZK3FFW": {}}},
                                "journeys": {"records_added": ["J1", "J2", "J3", "J4"], "records_removed": [],
                                             "records_modified": {}},
                                "_current_date": {"type": "non_dict_table", "expected": "2026-01-01", "actual": "x"}}}
    assert diff_summary(diff) == ("old: table removed; reservations: 1 modified (ZK3FFW); "
                                  "journeys: 4 added (J1, J2, J3, …); _current_date: '2026-01-01' → 'x'")
    assert diff_summary({"tables_added": [], "tables_removed": [], "tables_modified": {}}) == "no difference"


def test_junit_xml_reads_back_with_a_real_junit_reader(tmp_path: Path) -> None:
    metrics = [
        _metrics("eva_airline__voluntary_date_change", True, 1, scenario_directory="/runs/x/vdc__trial1"),
        _metrics("eva_airline__voluntary_date_change", False, 2, stop_reason="[INACTIVITY_TIMEOUT]"),
        _metrics("eva_airline__1_1_3", True, 1, token_usage={"agent": {"n_calls": 1}}),  # stalled
        {"scenario_name": "eva_airline__1_1_3", "trial": 2, "is_successful": "N/A", "scenario_duration": 1.0},
        _metrics("other__thing", False, 1, scenario_duration=0.25),
    ]
    context = JUnitContext("evasite eval_20260101_000000", min_agent_turns=3, trials=2,
                           eva_ids={"eva_airline__voluntary_date_change": "1.1.2", "eva_airline__1_1_3": "1.1.3"},
                           db_diffs={("eva_airline__voluntary_date_change", 2): "reservations: 1 modified (ZK3FFW)"})
    path = tmp_path / "junit.xml"
    path.write_text(junit_xml(metrics, context), encoding="utf-8")

    xml = JUnitXml.fromfile(str(path))
    suites = {suite.name: suite for suite in xml}
    assert set(suites) == {"eva_airline", "other"}
    airline = suites["eva_airline"]
    assert (airline.tests, airline.failures, airline.skipped, airline.errors) == (4, 2, 1, 0)
    cases = {f"{case.classname}.{case.name}": case for case in airline}
    assert list(cases) == ["eva_airline.1.x.voluntary_date_change [trial 1]", "eva_airline.1.x.voluntary_date_change [trial 2]",
                           "eva_airline.1.x.1_1_3 [trial 1]", "eva_airline.1.x.1_1_3 [trial 2]"]
    assert cases["eva_airline.1.x.voluntary_date_change [trial 1]"].is_passed
    assert cases["eva_airline.1.x.voluntary_date_change [trial 1]"].time == pytest.approx(2.5)
    (failure,) = cases["eva_airline.1.x.voluntary_date_change [trial 2]"].result
    assert isinstance(failure, Failure) and failure.type == "db_state_match"
    assert failure.message == ("stop reason: [INACTIVITY_TIMEOUT]; failed signals: db_state_match; "
                               "DB diff: reservations: 1 modified (ZK3FFW)")
    (stall,) = cases["eva_airline.1.x.1_1_3 [trial 1]"].result
    assert stall.type == "stalled" and stall.message.startswith("stalled: 1 agent LLM response(s) < 3")
    assert isinstance(cases["eva_airline.1.x.1_1_3 [trial 2]"].result[0], Skipped)
    (other,) = list(suites["other"])
    assert other.classname == "other" and other.name == "thing [trial 1]" and other.time == pytest.approx(0.25)
    assert xml.tests == 5 and xml.failures == 3


def test_gate_lines_and_markdown_say_what_the_gate_saw() -> None:
    names = [f"eva_airline__s{i}" for i in range(5)]
    base = RunFigures("eval_A", _runs({n: [True] for n in names}), [100.0, 200.0])
    run = RunFigures("eval_B", _runs({n: [i > 0] for i, n in enumerate(names)}), [150.0, 250.0, 300.0])
    verdict = evaluate(base.verdicts, run.verdicts)
    lines = gate_lines(verdict, "eval_A")
    assert lines[0] == "Baseline eval_A: 5 scenario(s) in common, 1 trial(s) each"
    assert lines[1] == "  Pass rate: 100.00% (5/5) → 80.00% (4/5), -20.00 points, 95% CI [-62.45, +26.43]"  # Newcombe, by hand from the Wilson limits
    assert "p = 0.5000 (exact)" in lines[2]
    assert lines[3] == "  Fewer passes (1): eva_airline__s0 1/1 → 0/1"
    assert lines[4:] == ["Gate: REGRESSION at α = 0.05",
                         "  - 1 scenario(s) passed every baseline trial and fail every trial now: eva_airline__s0"]

    md = summary_markdown(run, baseline=base, verdict=verdict)
    assert md.startswith("### evasite: `eval_B`\n\n|  | This run | Baseline `eval_A` |\n| --- | --- | --- |\n")
    assert "| Pass rate | 80.00% (4/5), 95% CI [37.55%, 96.38%] | 100.00% (5/5), 95% CI [56.55%, 100.00%] |" in md
    assert "| Latency p50 / p95 | 250 / 300 ms | 200 / 200 ms |" in md
    assert "**Gate: regression** at α = 0.05" in md
    assert "| `eva_airline__s0` | 1/1 | 0/1 | 0.5000 | 1.0000 |" in md
    assert "Flaky" not in md  # one trial: nothing to say about flakiness

    alone = summary_markdown(RunFigures("eval_C", _runs({"d__a": [True, False], "d__b": [True, True]})))
    assert "Baseline" not in alone and "Gate" not in alone
    assert "#### Flaky scenarios (1 of 2)" in alone and "| `d__a` | 1/2 |" in alone


def test_noise_floor_text() -> None:
    figures = RunFigures("eval_N", _runs({"d__a": [True] * 3, "d__b": [True, True, False],
                                          "d__c": [True, False, False], "d__d": [False] * 3}))
    assert noise_floor_text(figures) == (
        "Noise floor of eval_N: 4 scenario(s), up to 3 trial(s) each (4 with at least 2)\n"
        "Pass rate per trial: trial 1 75.00% (3/4), trial 2 50.00% (2/4), trial 3 25.00% (1/4)\n"
        "Spread across trials: 50.00 points (25.00% to 75.00%)\n"
        "Flaky scenarios (verdict varies over trials): 2 of 4\n"
        "  d__b: 2/3 passed\n"
        "  d__c: 1/3 passed\n"
        "Run-to-run SD of the pass rate: 20.41 points at 1 trial per scenario, 11.79 points at 3\n"
        "Two runs differing by less than ±56.58 points (1 trial each) or ±32.67 points (3 trials each) "
        "are within noise (95%)\n"
    )
    with pytest.raises(ValueError):
        noise_floor_text(RunFigures("eval_1", _runs({"d__a": [True]})))
