"""``--conditions`` through a run: one attempt per scenario × condition × trial, named, recorded
and scored per condition; the rules refused with one-line messages; the degradation table in
``all_summary.txt`` and on the run page; and, in voice, the agent really hears the phone line."""
from __future__ import annotations

import json
import wave
from pathlib import Path

import numpy as np
import pytest
from asgiref.sync import sync_to_async

from scoring.core.attempt_names import (
    attempt_name,
    comparable_name,
    condition_of,
    scenario_of,
    split_attempt_name,
)
from scoring.core.gate import verdicts_from_metrics
from scoring.core.summary import format_all_summary
from scoring.models import Run, ScenarioResult
from scoring.runs.executors.plan import plan_attempt
from scoring.runs.options import Limits, OptionsError, RunOptions, validate
from scoring.runs.progress import NullProgress
from scoring.runs.runner import _plan_queue, run_evaluation
from voice.conditions import Passthrough, PhoneLine

SCENARIO = "eva_airline__1_1_3"


def test_an_attempt_name_carries_its_condition_before_its_trial() -> None:
    name = attempt_name("eva_airline__1_1_3", 2, 3, "phone-loss5")
    assert name == "eva_airline__1_1_3__cond-phone-loss5__trial2"
    assert split_attempt_name(name) == ("eva_airline__1_1_3__cond-phone-loss5", 2)
    assert scenario_of(name) == "eva_airline__1_1_3" and condition_of(name) == "phone-loss5"
    chained = attempt_name("eva_airline__1_1_3", condition="phone+noise-babble-snr10-touser")
    assert scenario_of(chained) == "eva_airline__1_1_3" and condition_of(chained) == "phone+noise-babble-snr10-touser"
    assert condition_of("eva_airline__1_1_3__trial2") == "" and scenario_of("eva_airline__1_1_3") == "eva_airline__1_1_3"
    assert comparable_name("x", "clean") == comparable_name("x", "") == "x"
    assert comparable_name("x", "phone") == "x__cond-phone"


@pytest.mark.parametrize(("values", "message"), [
    ({"conditions": "noise:snr=99"}, "--conditions: condition 'noise:snr=99': snr must be between"),
    ({"conditions": "clean,,phone"}, "--conditions: empty entry"),
    ({"conditions": "phone,phone:loss=0"}, "are the same (phone)"),
    ({"conditions": "phone", "modality": "text"}, "--conditions other than clean need --modality voice"),
    ({"conditions": "barge-in", "user_url": "ws://127.0.0.1:9/"}, "barge-in change how the built-in passenger"),
    ({"conditions": "clean,rate:1.3", "user_url": "ws://127.0.0.1:9/"}, "a passenger at --user-url speaks for itself"),
])
@pytest.mark.django_db
def test_conditions_a_run_cannot_use_are_refused_with_one_line(values: dict, message: str) -> None:
    with pytest.raises(OptionsError) as refused:
        validate(RunOptions(scenarios=[SCENARIO], **values))
    assert message in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.django_db
def test_each_condition_counts_against_the_attempt_limit() -> None:
    options = RunOptions(scenarios=[SCENARIO, "eva_airline__1_1_4"], conditions="clean,phone,noise:snr=5")
    validate(options, limits=Limits(attempts=6))
    with pytest.raises(OptionsError, match="would start 6 attempts .* more than the limit of 5"):
        validate(options, limits=Limits(attempts=5))
    validate(RunOptions(scenarios=[SCENARIO], modality="text", conditions="clean"))  # clean needs no audio


@pytest.mark.django_db
def test_the_queue_runs_every_scenario_under_each_condition_and_plans_what_it_hears(tmp_path: Path) -> None:
    options = RunOptions(scenarios=[SCENARIO, "eva_airline__1_1_4"], trials=2,
                         conditions="clean,phone:loss=5%,rate:1.3", output_dir=str(tmp_path))
    _, queue = _plan_queue(options)
    assert [item.dir_name for item in queue[:6]] == [
        f"{SCENARIO}__cond-clean__trial1", f"{SCENARIO}__cond-clean__trial2",
        f"{SCENARIO}__cond-phone-loss5__trial1", f"{SCENARIO}__cond-phone-loss5__trial2",
        f"{SCENARIO}__cond-rate-1.3__trial1", f"{SCENARIO}__cond-rate-1.3__trial2"]
    assert len(queue) == 12 and len({item.key for item in queue}) == 12
    plans = {item.condition: plan_attempt(options, item, run_id=1, session_dir=tmp_path, events=NullProgress())
             for item in queue[:6:2]}
    assert plans["clean"].settings.condition.is_clean and plans["clean"].settings.user.speaker is None
    phone = plans["phone-loss5"].settings
    assert phone.user.speaker is None
    heard = phone.condition.audio_conditions(stream="a")
    # The passenger's line, as the agent hears it.
    assert set(heard) == {"agent"} and isinstance(heard["agent"], PhoneLine)
    assert heard["agent"] is not phone.condition.audio_conditions(stream="a")["agent"]  # fresh per attempt
    rate = plans["rate-1.3"].settings
    assert rate.user.speaker.rate == 1.3 and rate.condition.audio_conditions() == {}
    assert isinstance(rate.condition.audio_for("agent"), Passthrough)


def _metrics(name: str, condition: str, passed: bool, heard: int, latency_ms: float) -> dict:
    return {"scenario_name": name, "condition": condition, "is_successful": passed, "total_turns": 6,
            "scenario_duration": 40.0, "turns": [{"role": "agent"}] * 4,
            "latencies": [{"latency_ms": latency_ms}],
            "key_entity_accuracy": {"user_to_agent": {"spoken": 4, "intact": heard}},
            "turn_taking": {"interruptions": [{"yield_ms": latency_ms / 2}]}}


def test_the_summary_prints_one_row_per_condition_and_the_degradation() -> None:
    metrics = [_metrics(f"eva_airline__1_1_{i}", condition, passed, heard, ms)
               for i in (3, 4, 5)
               for condition, passed, heard, ms in (("clean", True, 4, 1000.0), ("phone", i != 5, 3, 1500.0),
                                                    ("noise-pink-snr0", i == 3, 1, 2000.0))]
    summary = format_all_summary(metrics, min_agent_turns=0, project_block=None)
    assert "Per condition" not in summary  # the upstream layout is untouched
    from scoring.core.summary import ProjectBlock

    block = format_all_summary(metrics, min_agent_turns=0, project_block=ProjectBlock()).split("evasite:")[1]
    lines = block.splitlines()
    start = lines.index("  Per condition:")
    assert lines[start + 1].startswith("    clean: 3/3 passed (100.00%, 95% CI [43.85%, 100.00%]); "
                                       "key entities user_to_agent 100.00% (12/12); handoff p50 1000 ms")
    assert "phone: 2/3 passed" in lines[start + 2] and "user_to_agent 75.00% (9/12)" in lines[start + 2]
    assert "yield p50 750 ms, p95 750 ms (n=3)" in lines[start + 2]
    assert "noise-pink-snr0: 1/3 passed" in lines[start + 3]
    assert lines[start + 4] == "  Degradation: clean 3/3 → phone 2/3 → noise-pink-snr0 1/3"
    assert "====== eva_airline__1_1_3__cond-phone ======" in summary  # per-scenario blocks say the condition


def test_the_gate_pairs_attempts_by_condition_and_a_clean_one_with_a_plain_run() -> None:
    run = [_metrics(SCENARIO, "clean", True, 4, 1.0), _metrics(SCENARIO, "phone", False, 4, 1.0)]
    verdicts = verdicts_from_metrics(run, min_agent_turns=0)
    assert verdicts == {SCENARIO: {1: True}, f"{SCENARIO}__cond-phone": {1: False}}
    plain = verdicts_from_metrics([{**run[0], "condition": None}], min_agent_turns=0)
    assert plain == {SCENARIO: {1: True}}


@pytest.mark.django_db(transaction=True)
async def test_a_text_run_under_clean_names_records_and_resumes_its_attempts(
        tmp_path: Path, client, django_user_model) -> None:
    options = RunOptions(scenarios=[SCENARIO, "eva_airline__1_1_4"], modality="text", trials=2, conditions="clean",
                         concurrency=2, output_dir=str(tmp_path))
    report = await run_evaluation(options)
    names = sorted(path.name for path in report.session_dir.iterdir() if path.is_dir())
    assert names == [f"{s}__cond-clean__trial{t}" for s in (SCENARIO, "eva_airline__1_1_4") for t in (1, 2)]
    assert all(m["condition"] == "clean" for m in report.metrics)
    record = json.loads((report.session_dir / "run_args.json").read_text())["invocations"][-1]
    assert record["parsed_args"]["conditions"] == "clean"
    assert record["conditions"] == [{"name": "clean", "spec": "clean", "parts": [{"kind": "clean"}]}]
    metadata = json.loads((report.session_dir / names[0] / "scenario_config" / "metadata.json").read_text())
    assert metadata["condition"]["spec"] == "clean" and "speech" not in metadata
    assert "    clean: 4/4 passed" in report.summary_text
    rows = await sync_to_async(list)(ScenarioResult.objects.filter(run_id=report.run_id).values_list(
        "scenario_name", "trial", "condition"))
    assert sorted(rows) == [(s, t, "clean") for s in (SCENARIO, "eva_airline__1_1_4") for t in (1, 2)]

    stamp = report.session_dir.name.removeprefix("eval_")
    resumed = await run_evaluation(RunOptions(resume=stamp, output_dir=str(tmp_path), **{
        k: getattr(options, k) for k in ("scenarios", "modality", "trials", "conditions")}))
    assert (resumed.loaded, resumed.executed) == (4, 0)
    assert await sync_to_async(ScenarioResult.objects.filter(run_id=report.run_id).count)() == 4

    # Compared with a plain run: the clean attempts pair with its attempts; only A has a conditions table.
    plain = await run_evaluation(RunOptions(scenarios=[SCENARIO], modality="text", output_dir=str(tmp_path)))
    user = await sync_to_async(django_user_model.objects.create_user)("viewer", password="pw")
    await sync_to_async(client.force_login)(user)
    page = (await sync_to_async(client.get)(f"/runs/compare/?a={report.run_id}&b={plain.run_id}")).content.decode()
    assert 'id="conditions-a"' in page and 'id="conditions-b"' not in page
    assert "fail→pass" not in page and "pass→fail" not in page


def _high_band_share(samples: np.ndarray, rate: int) -> float:
    """Share of the signal's energy above 4 kHz."""
    spectrum = np.abs(np.fft.rfft(samples.astype(np.float64))) ** 2
    freqs = np.fft.rfftfreq(len(samples), 1.0 / rate)
    return float(spectrum[freqs > 4000].sum() / max(spectrum.sum(), 1e-9))


def _agent_heard(scenario_dir: Path) -> tuple[np.ndarray, int]:
    """The left channel of conversation_log.wav: what the agent heard."""
    with wave.open(str(scenario_dir / "conversation_log.wav"), "rb") as wav:
        frames = np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")
        return frames.reshape(-1, wav.getnchannels())[:, 0], wav.getframerate()


@pytest.mark.quiet  # how soon the agent yields to a cut-in is judged in real time: first on the CPUs
@pytest.mark.slow(seconds=80)
@pytest.mark.django_db(transaction=True)
async def test_in_voice_the_agent_hears_the_phone_line_yields_to_a_barge_in_and_the_page_shows_each_condition(
        tmp_path: Path, settings, client, django_user_model) -> None:
    settings.EVASITE_STT = "whisper"
    # The second condition is a phone line and an impatient passenger who cuts into agent turns
    # once it has heard 1 s of them (the greeting, 3.5 s, is the first).
    phone = "phone+barge-in-after1"
    options = RunOptions(scenarios=["eva_airline__voluntary_date_change"], conditions="clean,phone+barge-in:after=1s",
                         concurrency=2, duration=40, max_auto_retries=2, output_dir=str(tmp_path))
    # Retries as a run makes them: on a loaded machine a bot's setup can outlast the 15 s request
    # timeout, which the harness answers by running the attempt again.
    report = await run_evaluation(options)
    by_condition = {m["condition"]: m for m in report.metrics}
    assert set(by_condition) == {"clean", phone}
    shares = {}
    for condition, metrics in by_condition.items():
        scenario_dir = Path(metrics["scenario_directory"])
        assert scenario_dir.name == f"eva_airline__voluntary_date_change__cond-{condition}"
        timeline = json.loads((scenario_dir / "speech_timeline.json").read_text())
        assert timeline["user"] and timeline["agent"]  # both spoke within the 40 s
        figures = metrics["turn_taking"]
        assert figures["speech_s"]["user"] > 1.0 and 0.0 <= figures["silence_share"] <= 1.0
        samples, rate = _agent_heard(scenario_dir)
        assert np.abs(samples).max() > 1000  # the passenger's speech reached the agent
        shares[condition] = _high_band_share(samples, rate)
        metadata = json.loads((scenario_dir / "scenario_config" / "metadata.json").read_text())
        assert metadata["condition"]["name"] == condition and metadata["condition"]["passenger_tts"] == "piper"
    # Piper's voice has energy above 4 kHz; a 300-3400 Hz telephone line removes it.
    assert shares["clean"] > 1e-4 and shares[phone] < shares["clean"] / 1000, shares
    # The passenger cut in, and the agent stopped talking: for most cuts its audio ended within
    # 1.5 s of the caller's own start (both at the bridge), where an agent that did not yield
    # would play each turn out (2.3 s of greeting were left at the first cut, more of a read-back).
    # Most, not each: a starved agent can hear one cut only once its turn has ended (a first
    # yield of 2368 ms, then 528 and 496, was seen when this test ran niced beside the suite).
    interruptions = by_condition[phone]["turn_taking"]["interruptions"]
    assert interruptions, by_condition[phone]["turn_taking"]
    yields = sorted(cut["yield_ms"] for cut in interruptions)
    assert yields[len(yields) // 2] < 1500, interruptions

    user = await sync_to_async(django_user_model.objects.create_user)("viewer", password="pw")
    await sync_to_async(client.force_login)(user)
    run = await sync_to_async(Run.objects.get)(pk=report.run_id)
    page = (await sync_to_async(client.get)(run.get_absolute_url())).content.decode()
    assert 'id="run-conditions"' in page and "<code>clean</code>" in page and f"<code>{phone}</code>" in page
    assert 'aria-label="Pass rate by condition"' in page
    result = await sync_to_async(ScenarioResult.objects.get)(run=run, condition=phone)
    page = (await sync_to_async(client.get)(result.get_absolute_url())).content.decode()
    assert f'<code id="result-condition" title="phone+barge-in:after=1s">{phone}</code>' in page
    assert 'id="turn-taking"' in page and "speech_timeline.json" in page


@pytest.mark.django_db
def test_a_barge_in_attempt_plans_a_passenger_that_cuts_in(tmp_path: Path) -> None:
    from voice.conditions.speaker import BargeInSettings

    options = RunOptions(scenarios=[SCENARIO], conditions="clean,barge-in:after=2s:max=1", output_dir=str(tmp_path))
    validate(options)
    _, queue = _plan_queue(options)
    plans = {item.condition: plan_attempt(options, item, run_id=1, session_dir=tmp_path, events=NullProgress())
             for item in queue}
    assert plans["barge-in-after2-max1"].settings.user.barge_in == BargeInSettings(after_s=2.0, max_cuts=1)
    assert plans["clean"].settings.user.barge_in is None and plans["clean"].settings.agent.barge_in is None
