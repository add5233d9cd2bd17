"""The release gate in the site, below the browser: who may make a run the baseline and which runs
may be one, the New-run form's baseline choice against hostile values, a site run gated with the
command line's own verdict, and what the run and compare pages say (flaky scenarios, rules,
p-values) from rows written the way the runner writes them."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from scoring.models import BaselineMark, Run
from scoring.runs.baseline import load_run
from scoring.runs.finish import finish_report
from scoring.runs.options import RunOptions
from scoring.runs.runner import RunError, run_evaluation
from scoring.web import services
from scoring.web.forms import RunForm
from scoring.web.gate import baseline_current
from scoring.web.site_gate import gate_finished_run, open_site_baseline
from tests.pages.gate_seed import record_run
from tests.pages.web_helpers import form_data

A, B, C = "eva_airline__1_1_3", "eva_airline__1_1_4", "eva_airline__1_1_5"
NULL_FAILS = ["eva_airline__1_1_3", "eva_airline__2_1_2"]  # the null agent leaves their gold changes undone


@pytest.fixture
def owner_client(django_user_model) -> Client:
    django_user_model.objects.create_user("owner", password="pw-owner-123")
    client = Client()
    client.force_login(django_user_model.objects.get(username="owner"))
    return client


def _text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def _rows(html: str, attribute: str) -> dict[str, list[str]]:
    """Table rows marked ``<tr data-<attribute>="key">``: key → the text of each cell."""
    rows = {}
    for key, body in re.findall(rf'<tr data-{attribute}="([^"]+)">(.*?)</tr>', html):
        cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", body)
        rows[key] = [re.sub(r"<[^>]+>", "", cell).strip() for cell in cells]
    return rows


@pytest.mark.django_db
def test_use_as_baseline_is_a_post_by_the_owner_or_staff(owner_client: Client, client: Client, tmp_path: Path,
                                                          django_user_model) -> None:
    run_id = record_run(str(tmp_path), "20260101_100000", {A: [True]}, owner="owner", source=Run.Source.WEB)
    url = f"/runs/{run_id}/baseline/"
    assert "Use as baseline" not in client.get(f"/runs/{run_id}/").content.decode()  # the reader sees no button
    assert client.post(url).status_code == 403 and not BaselineMark.objects.exists()
    assert owner_client.get(url).status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(django_user_model.objects.get(username="owner"))
    assert strict.post(url).status_code == 403 and not BaselineMark.objects.exists()  # no CSRF token

    page = owner_client.get(f"/runs/{run_id}/").content.decode()
    assert f'action="{url}"' in page and "Use as baseline" in page
    response = owner_client.post(url, follow=True)
    text = _text(response)
    assert "is now the site&#x27;s baseline" in text and "Site baseline" in text
    assert "Use as baseline" not in text  # already the baseline: no button
    mark = BaselineMark.objects.get()
    assert mark.run_id == run_id and mark.marked_by.username == "owner"
    assert "The New-run form preselects this run as the baseline (chosen by owner" in text


@pytest.mark.django_db
def test_only_a_finished_benchmark_run_with_results_can_be_the_baseline(owner_client: Client, tmp_path: Path) -> None:
    running = record_run(str(tmp_path), "20260101_100001", {A: [True]}, owner="owner", source=Run.Source.WEB,
                         status=Run.Status.RUNNING)
    human = record_run(str(tmp_path), "20260101_100002", {A: [True]}, owner="owner", source=Run.Source.HUMAN)
    stopped = record_run(str(tmp_path), "20260101_100003", {A: [True]}, owner="owner", source=Run.Source.WEB,
                         status=Run.Status.INTERRUPTED)
    for run_id in (running, human, stopped):
        assert "Use as baseline" not in owner_client.get(f"/runs/{run_id}/").content.decode()
        text = _text(owner_client.post(f"/runs/{run_id}/baseline/", follow=True))
        assert "Only a finished run with results can be the baseline" in text
    assert not BaselineMark.objects.exists()
    assert owner_client.post("/runs/999999/baseline/").status_code == 404


@pytest.mark.django_db
def test_the_latest_mark_is_the_baseline_and_a_deleted_one_gives_way(tmp_path: Path) -> None:
    first = record_run(str(tmp_path), "20260101_100004", {A: [True]})
    second = record_run(str(tmp_path), "20260101_100005", {A: [False]})
    assert baseline_current() is None
    services.run_mark_baseline(run_id=first, user_id=None)
    services.run_mark_baseline(run_id=second, user_id=None)
    services.run_mark_baseline(run_id=second, user_id=None)  # again: nothing new
    assert baseline_current().run_id == second and BaselineMark.objects.count() == 2
    Run.objects.filter(pk=second).delete()
    assert baseline_current().run_id == first


@pytest.mark.django_db
def test_the_form_offers_finished_runs_preselects_the_baseline_and_refuses_anything_else(tmp_path: Path) -> None:
    finished = record_run(str(tmp_path), "20260101_100006", {A: [True]})
    marked = record_run(str(tmp_path), "20260101_100007", {A: [True]})
    running = record_run(str(tmp_path), "20260101_100008", {A: [True]}, status=Run.Status.RUNNING)
    human = record_run(str(tmp_path), "20260101_100009", {A: [True]}, source=Run.Source.HUMAN)
    services.run_mark_baseline(run_id=marked, user_id=None)

    form = RunForm()
    offered = [value for value, _ in form.fields["baseline"].choices]
    assert offered[0] == "" and set(offered[1:]) == {str(finished), str(marked)}
    html = str(form["baseline"])
    assert re.search(rf'<option value="{marked}" selected>[^<]*the site&#x27;s baseline', html)
    assert [legend for legend, _ in form.fieldsets()][-1] == "Gate (optional)"
    assert "junit_xml" not in form.fields and "summary_md" not in form.fields  # never a server path

    for hostile in ("../../etc/passwd", "/tmp", "20260101_100006", str(running), str(human), "999999", " 1", "1e3"):
        bound = RunForm(form_data(baseline=hostile))
        assert not bound.is_valid() and "baseline" in bound.errors, hostile
    bound = RunForm(form_data(baseline=str(finished)))
    assert bound.is_valid(), bound.errors
    assert bound.options.baseline == str(finished)
    bound = RunForm(form_data(baseline=""))
    assert bound.is_valid() and bound.options.baseline is None


@pytest.mark.django_db
def test_a_site_run_names_its_baseline_by_a_readable_run_id_only(tmp_path: Path) -> None:
    stopped = record_run(str(tmp_path), "20260101_100010", {A: [True]}, status=Run.Status.INTERRUPTED)
    for reference, message in (("../eval_x", "must be a run of this site"), ("20260101_100010", "must be a run"),
                               (str(stopped), "cannot be the baseline"), ("424242", "cannot be the baseline")):
        with pytest.raises(RunError, match=message):
            open_site_baseline(RunOptions(baseline=reference, output_dir=str(tmp_path)))
    # A resumed run still finishes, and records why it was not gated.
    opened = open_site_baseline(RunOptions(baseline="424242", resume="20260101_100010", output_dir=str(tmp_path)))
    assert opened.stored is None and "cannot be the baseline" in opened.problem
    assert open_site_baseline(RunOptions(output_dir=str(tmp_path))) is None


@pytest.mark.django_db(transaction=True)
async def test_a_site_run_stores_the_command_lines_verdict_and_its_page_shows_it(tmp_path: Path) -> None:
    def options(agent: str, baseline: str | None = None) -> RunOptions:
        return RunOptions(scenarios=list(NULL_FAILS), modality="text", agent_model=agent, concurrency=2,
                          output_dir=str(tmp_path), baseline=baseline)

    gold = await run_evaluation(options("gold-replay"))
    site = options("null", str(gold.run_id))
    opened = await sync_to_async(open_site_baseline)(site)
    report = await run_evaluation(site)
    await gate_finished_run(report, site, opened)

    run = await sync_to_async(Run.objects.get)(pk=report.run_id)
    cli = await sync_to_async(lambda: finish_report(report, site, baseline=load_run(str(gold.run_id),
                                                                                    output_dir=str(tmp_path)),
                                                    environ={}))()
    assert run.baseline_id == gold.run_id and run.gate["regression"] is True
    assert run.gate["lines"] == cli.lines and cli.verdict.regression  # the command line's very report
    assert run.gate["reasons"] == cli.verdict.reasons()
    assert [flip["name"] for flip in run.gate["flips"]] == NULL_FAILS

    def page() -> str:
        client = Client()
        from django.contrib.auth import get_user_model
        client.force_login(get_user_model().objects.create_user("watcher", password="pw-watcher-1"))
        return _text(client.get(f"/runs/{report.run_id}/"))

    text = await sync_to_async(page)()
    assert 'data-regression="true"' in text and "Regression</span> This run against the baseline" in text
    assert "2 scenario(s) passed every baseline trial and fail every trial now" in text
    assert "100.00% (2/2) → 0.00% (0/2)" in text and "−100.00 points, 95% interval [" in text
    assert f'href="/runs/{gold.run_id}/">Baseline: ' in text
    assert f'href="/runs/compare/?a={gold.run_id}&amp;b={report.run_id}">Compare with the baseline' in text
    assert not list(tmp_path.glob("**/*.xml")) and not list(tmp_path.glob("**/*.md"))  # no report files


@pytest.mark.django_db
def test_run_page_lists_flaky_scenarios_with_their_pass_counts(client: Client, tmp_path: Path) -> None:
    three = record_run(str(tmp_path), "20260101_100011", {A: [True, False, True], B: [True, True, True],
                                                          C: [False, False, False]})
    text = _text(client.get(f"/runs/{three}/"))
    assert "<h2>Flaky scenarios</h2>" in text and "1 of 3 scenarios gave different verdicts" in text
    assert _rows(text, "scenario") == {A: [f"{A} flaky", "2/3"]}
    steady = record_run(str(tmp_path), "20260101_100012", {A: [True, True], B: [False, False]})
    assert "None: every scenario gave the same verdict on every trial." in _text(client.get(f"/runs/{steady}/"))
    single = record_run(str(tmp_path), "20260101_100013", {A: [True], B: [False]})
    text = _text(client.get(f"/runs/{single}/"))
    assert "Flaky scenarios" not in text and "Release gate" not in text


@pytest.mark.django_db
def test_compare_shows_the_gates_rules_flips_and_each_sides_flaky_scenarios(client: Client, tmp_path: Path) -> None:
    base = record_run(str(tmp_path), "20260101_100014", {A: [True, False, True], B: [True, True, True],
                                                         C: [True, True, True]})
    now = record_run(str(tmp_path), "20260101_100015", {A: [False, False, False], B: [False, False, False],
                                                        C: [False, True, False]}, agent="null")
    text = _text(client.get(f"/runs/compare/?a={base}&b={now}"))
    assert 'data-regression="true"' in text
    assert "B against the baseline <code>eval_20260101_100014</code>, at α = 0.05" in text
    gate = text.split('id="compare-gate"')[1].split("</section>")[0]
    rules = _rows(gate, "rule")
    # Sign-flip over the deltas −2/3, −1, −2/3: only the all-negative assignment is as low, 1/8.
    assert rules["1"][0] == "The pass rate dropped" and rules["1"][2:] == ["0.1250", "no"]
    # Fisher one-sided: 3/3 → 0/3 is 1/20, 2/3 → 0/3 is 4/20 and 3/3 → 1/3 is 4/20; Holm: 0.15, 0.4, 0.4.
    assert rules["2"][0] == "One scenario dropped" and rules["2"][2:] == ["0.1500", "no"]
    assert rules["3"][0] == "A scenario broke" and rules["3"][1].endswith("1 scenario(s)")
    assert rules["3"][2:] == ["—", "yes"]
    assert list(_rows(gate, "scenario").items()) == [
        (B, [B, "3/3", "0/3", "0.0500", "0.1500", "broke"]),
        (A, [A, "2/3", "0/3", "0.2000", "0.4000", "fewer passes"]),
        (C, [C, "3/3", "1/3", "0.2000", "0.4000", "fewer passes"])]
    assert "Flaky scenarios in A</h3>" in text and "Flaky scenarios in B</h3>" in text
    assert _rows(text.split('id="flaky-a"')[1].split("</section>")[0], "scenario") == {A: [f"{A} flaky", "2/3"]}
    assert _rows(text.split('id="flaky-b"')[1].split("</section>")[0], "scenario") == {C: [f"{C} flaky", "1/3"]}
    assert text.count("flaky in A</span>") == 3 and text.count("flaky in B</span>") == 3  # every trial row


@pytest.mark.django_db
def test_compare_without_a_shared_scenario_says_there_is_nothing_to_gate(client: Client, tmp_path: Path) -> None:
    left = record_run(str(tmp_path), "20260101_100016", {A: [True]})
    right = record_run(str(tmp_path), "20260101_100017", {B: [False]})
    text = _text(client.get(f"/runs/compare/?a={left}&b={right}"))
    assert "share no scored scenario trial, so there is nothing to gate on" in text
    assert "data-regression" not in text and "Flaky scenarios" not in text


def test_setting_up_django_does_not_import_the_voice_stack() -> None:
    """The admin imports the site's services (and so the gate's reads) at start-up, before voice's
    app config quiets pipecat's logging: they must not drag pipecat in, or every manage.py
    command prints its banner on stderr."""
    import subprocess
    import sys

    code = ("import os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'evasite.settings'); "
            "import django; django.setup(); print(sorted(m for m in ('pipecat', 'aiortc') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
