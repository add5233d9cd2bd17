"""The rules behind the review pages, through the test client and as pure functions: ranged
artifact responses, run state and its notices, GET pages that never write, the review and
annotation writes with their permissions and bounds, the New-run plan and confirmation, the
diff's lists item by item, misheard entities, compare deltas, run list filters and the admin."""
from __future__ import annotations

import os
import re
import socket
import subprocess
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from scoring.core.stats import rate_difference
from scoring.models import Run, RunTag, ScenarioResult
from scoring.web.compare import ResultSummary, compare_runs, differing_flags
from scoring.web.diff_outline import list_items
from scoring.web.misheard import heard_as
from scoring.web.ranges import parse_range
from scoring.web.run_state import cancel_refusal, run_state, stop_reason_text
from scoring.web.start_plan import History, duration_text, start_plan
from tests.pages.web_helpers import form_data


def _user(name: str, *, staff: bool = False):
    return get_user_model().objects.create_user(name, password=f"pw-{name}-123", is_staff=staff)


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _run(tmp_path: Path, stamp: str = "20260101_000000", **fields) -> Run:
    defaults = {"status": Run.Status.FINISHED, "scenario_names": ["eva_airline__1_1_3"], "total_scenarios": 1}
    return Run.objects.create(timestamp=stamp, session_dir=str(tmp_path / f"eval_{stamp}"), **{**defaults, **fields})


def _result(run: Run, name: str = "eva_airline__1_1_3", position: int = 0, success: bool | None = True,
            directory: Path | None = None) -> ScenarioResult:
    return ScenarioResult.objects.create(run=run, scenario_name=name, position=position, is_successful=success,
                                         directory=str(directory or ""), stop_reason="[EXIT]",
                                         metrics={"scenario_name": name, "is_successful": success, "turns": [
                                             {"role": "agent", "text": "Hello <b>there</b>"},
                                             {"role": "user", "text": "Hi", "heard": "hi"}]})


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


# --- ranges ------------------------------------------------------------------------------------


def test_parse_range_follows_the_rfc_for_one_range() -> None:
    assert parse_range("bytes=0-99", 1000) == (0, 99)
    assert parse_range("bytes=900-", 1000) == (900, 999)
    assert parse_range("bytes=-100", 1000) == (900, 999)
    assert parse_range("bytes=950-5000", 1000) == (950, 999)
    assert parse_range("bytes=1000-", 1000) is False  # starts past the end: 416
    assert parse_range("bytes=-0", 1000) is False
    for ignored in ("", "items=0-1", "bytes=5-1", "bytes=0-1,5-6", "bytes=-", "bytes=a-b"):
        assert parse_range(ignored, 1000) is None, ignored


@pytest.mark.django_db
def test_artifacts_answer_byte_ranges(tmp_path: Path) -> None:
    directory = tmp_path / "eval_x" / "eva_airline__1_1_3"
    directory.mkdir(parents=True)
    (directory / "conversation_log.wav").write_bytes(bytes(range(256)) * 4)
    result = _result(_run(tmp_path), directory=directory)
    client = _client(_user("reader"))
    url = f"/results/{result.pk}/artifact/conversation_log.wav"
    whole = client.get(url)
    assert whole.status_code == 200 and whole["Accept-Ranges"] == "bytes"
    part = client.get(url, headers={"Range": "bytes=10-19"})
    assert part.status_code == 206 and part["Content-Range"] == "bytes 10-19/1024" and part["Content-Length"] == "10"
    assert b"".join(part.streaming_content) == bytes(range(10, 20))
    tail = client.get(url, headers={"Range": "bytes=-4"})
    assert b"".join(tail.streaming_content) == bytes(range(252, 256))
    outside = client.get(url, headers={"Range": "bytes=5000-"})
    assert outside.status_code == 416 and outside["Content-Range"] == "bytes */1024"


# --- run state ---------------------------------------------------------------------------------


def test_stop_reasons_read_in_the_sites_words() -> None:
    assert stop_reason_text("interrupted; resume with --resume 20260101_000000") == (
        "It was cancelled or interrupted before it finished.")
    assert stop_reason_text("cancelled from the site by alice") == "It was cancelled by alice."
    gone = stop_reason_text("interrupted: its coordinating process (box, pid 42) is gone; resume with --resume x")
    assert gone == "The process that coordinated it (box, pid 42) is no longer running."
    stalled = stop_reason_text("interrupted (no worker progress for 900 s); resume with --resume 20260101_000000")
    assert stalled == "Reason: no worker progress for 900 s." and "--resume" not in stalled


@pytest.mark.django_db
def test_run_state_controls_and_notices(tmp_path: Path) -> None:
    running = _run(tmp_path, "r", status=Run.Status.RUNNING, coordinator_host=socket.gethostname(),
                   coordinator_pid=os.getpid(), total_scenarios=4, completed_scenarios=1)
    state = run_state(running, may_control=True)
    assert (state.status, state.may_cancel, state.may_resume, state.notice) == ("running", True, False, None)
    assert not run_state(running, may_control=False).may_cancel

    stopped = _run(tmp_path, "s", status=Run.Status.INTERRUPTED, total_scenarios=4, completed_scenarios=1,
                   error="interrupted; resume with --resume s")
    state = run_state(stopped, may_control=True)
    assert state.label == "stopped" and state.may_resume and not state.may_cancel
    assert state.notice.kind == "info" and "Resume runs the other 3" in state.notice.text
    assert "--resume" not in state.notice.text
    assert "Its owner or staff can resume it." in run_state(stopped, may_control=False).notice.text
    assert "nothing to cancel" in cancel_refusal(stopped) and "Ctrl-C" not in cancel_refusal(stopped)

    done = _run(tmp_path, "f", total_scenarios=2, completed_scenarios=2)
    assert run_state(done, may_control=True) .may_resume is False and run_state(done, may_control=True).notice is None
    failed = _run(tmp_path, "x", status=Run.Status.FAILED, error="RuntimeError: boom")
    notice = run_state(failed, may_control=True).notice
    assert notice.kind == "error" and notice.detail == "RuntimeError: boom"
    cli = _run(tmp_path, "c", status=Run.Status.RUNNING, source=Run.Source.CLI, coordinator_host="elsewhere",
               coordinator_pid=1)
    assert "started from the command line on elsewhere" in cancel_refusal(cli) and "Ctrl-C" not in cancel_refusal(cli)


@pytest.mark.django_db
def test_get_pages_show_an_orphaned_run_as_stopped_without_writing(tmp_path: Path, monkeypatch) -> None:
    from scoring.web import recovery

    # The server's one sweep, on the first request a process handles, is behind it (when this is
    # that first request, the sweep would rightly mark the orphan).
    monkeypatch.setattr(recovery, "_swept", True)
    owner = _user("owner")
    orphan = _run(tmp_path, "o", status=Run.Status.RUNNING, owner=owner, total_scenarios=3,
                  coordinator_host=socket.gethostname(), coordinator_pid=_dead_pid())
    client = _client(owner)
    for url in ("/", f"/runs/{orphan.pk}/", f"/runs/{orphan.pk}/panels/"):
        assert client.get(url).status_code == 200
    orphan.refresh_from_db()
    assert orphan.status == Run.Status.RUNNING  # reading a page wrote nothing
    page = client.get(f"/runs/{orphan.pk}/").content.decode()
    assert 'data-status="interrupted"' in page and ">Resume</button>" in page and ">Cancel</button>" not in page
    assert "is no longer running" in page


@pytest.mark.django_db
def test_the_panels_fragment_is_the_pages_own_markup(tmp_path: Path) -> None:
    run = _run(tmp_path, total_scenarios=2, completed_scenarios=1, successful_scenarios=1)
    _result(run)
    client = _client(_user("reader"))
    fragment = client.get(f"/runs/{run.pk}/panels/").content.decode()
    page = client.get(f"/runs/{run.pk}/").content.decode()
    for panel in ("run-status", "run-controls", "run-notice", "run-progress-panel", "run-facts", "run-figures",
                  "run-results", "run-signals", "run-summary"):
        assert f'id="{panel}" data-panel' in fragment and f'id="{panel}" data-panel' in page, panel
    assert "<html" not in fragment and "1 passed / 1 with a result / 2 queued" in fragment


# --- review and annotation -----------------------------------------------------------------------


@pytest.mark.django_db
def test_review_form_saves_stamps_and_keeps_to_owner_or_staff(tmp_path: Path) -> None:
    owner, other, staff = _user("owner"), _user("other"), _user("boss", staff=True)
    run = _run(tmp_path, owner=owner)
    result = _result(run)
    url = f"/results/{result.pk}/review/"
    assert _client(other).post(url, {"verdict": "agrees"}).status_code == 403
    assert not ScenarioResult.objects.get(pk=result.pk).reviewed
    assert "review-form" not in _client(other).get(f"/results/{result.pk}/").content.decode()
    response = _client(owner).post(url, {"verdict": "disagrees", "note": "x" * 10, "after": "stay"})
    assert response.status_code == 302 and response["Location"] == f"/results/{result.pk}/"
    result.refresh_from_db()
    assert result.reviewed and result.review_verdict == "disagrees" and result.reviewed_by == owner
    stamped = result.reviewed_at
    _client(staff).post(url, {"reviewed": "on", "verdict": "disagrees", "note": "x" * 10})
    result.refresh_from_db()
    assert result.reviewed_by == owner and result.reviewed_at == stamped  # nothing changed: no new stamp
    assert _client(owner).post(url, {"verdict": "maybe"}).status_code == 302  # refused choice: a message
    assert _client(owner).post(url, {"note": "n" * 5000}).status_code == 302
    result.refresh_from_db()
    assert result.review_verdict == "disagrees" and len(result.review_note) == 10


@pytest.mark.django_db
def test_save_and_next_goes_to_the_next_unreviewed_failure_then_back_to_the_run(tmp_path: Path) -> None:
    owner = _user("owner")
    run = _run(tmp_path, owner=owner)
    passed, failed = _result(run, "eva_airline__1_1_3", 0, True), _result(run, "eva_airline__1_1_4", 1, False)
    client = _client(owner)
    response = client.post(f"/results/{passed.pk}/review/", {"verdict": "agrees", "after": "next"})
    assert response["Location"] == f"/results/{failed.pk}/"
    response = client.post(f"/results/{failed.pk}/review/", {"verdict": "agrees", "after": "next"})
    assert response["Location"] == f"/runs/{run.pk}/"


@pytest.mark.django_db
def test_annotations_are_bounded_validated_and_escaped(tmp_path: Path) -> None:
    owner, other = _user("owner"), _user("other")
    run = _run(tmp_path, owner=owner)
    url = f"/runs/{run.pk}/annotate/"
    assert _client(other).post(url, {"name": "mine now"}).status_code == 403
    _client(owner).post(url, {"name": "  <img src=x onerror=alert(1)>\n base ", "tags": "Base, b-2 base",
                              "note": "line one\nline two"})
    run.refresh_from_db()
    assert run.name == "<img src=x onerror=alert(1)> base" and run.note == "line one\nline two"
    assert list(run.tags.values_list("name", flat=True)) == ["b-2", "base"]
    page = _client(other).get(f"/runs/{run.pk}/").content.decode()
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt; base" in page
    assert "Name, tags and note" not in page  # not the owner: no form
    for bad in ({"tags": "has/slash"}, {"tags": ",".join(f"t{i}" for i in range(13))}, {"name": "n" * 121}):
        _client(owner).post(url, {"name": "kept", **bad})
        run.refresh_from_db()
        assert run.name == "<img src=x onerror=alert(1)> base", bad  # refused as a whole
    _client(owner).post(url, {"name": "", "tags": "", "note": ""})
    run.refresh_from_db()
    assert run.title == str(run) and not run.tags.exists()
    assert not RunTag.objects.exists()  # unused tags go


# --- run list ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_run_list_filters_and_survives_junk(tmp_path: Path) -> None:
    reader = _user("reader")
    voice = _run(tmp_path, "v", modality="voice", agent_model="listening", name="whisper trial")
    text = _run(tmp_path, "t", modality="text", agent_model="gold-replay")
    human = _run(tmp_path, "h", modality="voice", source=Run.Source.HUMAN, owner=reader)
    voice.tags.add(RunTag.objects.create(name="baseline"))
    client = _client(reader)

    def listed(query: str) -> set[int]:
        page = client.get("/?" + query).content.decode()
        return {run.pk for run in (voice, text, human) if f'href="/runs/{run.pk}/"' in page}

    assert listed("") == {voice.pk, text.pk}
    assert listed("source=human") == {human.pk}
    assert listed("source=all") == {voice.pk, text.pk, human.pk}
    assert listed("tag=baseline") == {voice.pk}
    assert listed("q=WHISPER") == {voice.pk}
    assert listed("agent=gold-replay") == {text.pk}
    assert listed("modality=voice&source=all") == {voice.pk, human.pk}
    assert listed("modality=%3Cscript%3E&source=%00&page=-3") == {voice.pk, text.pk}  # junk falls back
    assert listed("tag=" + "x" * 500) == set()
    assert "human" in client.get("/?source=human").content.decode()


# --- New run ------------------------------------------------------------------------------------


def test_start_plan_estimates_from_history_and_flags_big_runs() -> None:
    history = History({"voice": 60.0, "voice/listening": 90.0, "text": 1.0}, {"voice": 40, "voice/listening": 2, "text": 9})
    plan = start_plan(scenarios=50, trials=1, modality="voice", concurrency=4, agent_model="listening", history=history)
    assert (plan.attempts, plan.seconds_per_attempt, plan.samples) == (50, 60.0, 40)  # too few of listening's own
    assert plan.wall_seconds == 13 * 60.0 and plan.wall_text == "about 13 min" and plan.is_big
    small = start_plan(scenarios=3, trials=1, modality="voice", concurrency=1, history=history)
    assert not small.is_big and small.confirmation != plan.confirmation
    text = start_plan(scenarios=50, trials=1, modality="text", concurrency=1, history=history)
    assert not text.is_big and text.wall_text == "under a minute"
    assert start_plan(scenarios=50, trials=2, modality="text", concurrency=1, history=history).is_big
    assert start_plan(scenarios=1, trials=1, modality="text", concurrency=1, history=History({}, {})).wall_text == ""
    assert duration_text(3 * 3600 + 5 * 60) == "about 3 h 05 min"


@pytest.mark.django_db
def test_a_big_run_asks_once_and_starts_only_with_the_matching_confirmation(monkeypatch) -> None:
    from scoring.web import launcher

    started = []

    async def fake_start(options, *, owner_id):
        started.append(options)
        return 1000 + len(started)

    monkeypatch.setattr(launcher, "start", fake_start)
    client = _client(_user("starter"))
    big = form_data(scope="all", scenarios=[], modality="voice")
    first = client.post("/runs/new/", big)
    page = first.content.decode()
    assert first.status_code == 200 and not started
    assert 'name="confirm" value="50-voice-1"' in page and "This is a big run." in page
    assert client.post("/runs/new/", {**big, "confirm": "50-voice-2"}).status_code == 200 and not started
    assert client.post("/runs/new/", {**big, "confirm": "50-voice-1"}).status_code == 302
    assert len(started) == 1
    assert client.post("/runs/new/", form_data()).status_code == 302 and len(started) == 2  # small: no question
    picked = client.get("/runs/new/?scenario=eva_airline__1_1_4").content.decode()
    box = re.search(r'<input[^>]*name="scenarios"[^>]*value="eva_airline__1_1_4"[^>]*>', picked).group(0)
    assert "checked" in box  # a scenario page's "Run it" lands here with it picked
    assert "checked" in re.search(r'<input[^>]*name="scope"[^>]*value="pick"[^>]*>', picked).group(0)
    junk = client.get("/runs/new/?scenario=../../etc/passwd").content.decode()
    assert not re.findall(r'<input[^>]*name="scenarios"[^>]*checked', junk)


# --- pure presenters ----------------------------------------------------------------------------


def test_lists_in_the_diff_are_laid_out_item_by_item() -> None:
    expected = [{"flight_number": "SK621", "date": "2026-03-25"}, {"flight_number": "SK700", "date": "2026-03-27"}]
    actual = [{"flight_number": "SK621", "date": "2026-03-20"}, {"flight_number": "SK700", "date": "2026-03-27"},
              {"flight_number": "SK999", "date": "2026-04-01"}]
    nodes = list_items(expected, actual)
    labels = [node.label for node in nodes]
    assert labels == ["item 1 changed: flight_number=SK621, date=2026-03-25", "extra item 3: flight_number=SK999, date=2026-04-01"]
    assert [(c.label, c.expected, c.actual) for c in nodes[0].children] == [("date", '"2026-03-25"', '"2026-03-20"')]
    assert nodes[1].kind == "extra"
    missing = list_items(["a", "b", "c"], ["a", "c"])
    assert [(n.label, n.kind) for n in missing] == [("item 2 missing: b", "missing")]


def test_misheard_entities_say_what_they_became() -> None:
    assert heard_as("ZK3FFW", "My code is ZK3FFW, Samantha.", "my code is said cat three samantha") == "said cat three"
    assert heard_as("March 25", "Fly on March 25 please", "fly on march twenty please") == "march twenty"
    assert heard_as("ZK3FFW", "ZK3FFW", "") == ""
    assert heard_as("SK621", "nothing of it here", "nothing") == ""


def test_compare_deltas_use_the_stats_module() -> None:
    def s(pk: int, ok: bool, p50: float, tokens: float) -> ResultSummary:
        return ResultSummary(pk, ok, "[EXIT]", 5, p50, p50 * 1.5, tokens, None)

    a = {(f"s{i}", 1): s(i, i % 3 != 0, 800 + i, 1000) for i in range(12)}
    b = {(f"s{i}", 1): s(100 + i, True, 1600 + i, 500) for i in range(10)}
    b[("only_b", 1)] = s(200, False, 900, 500)
    result = compare_runs(a, b)
    deltas = {d.label: d for d in result.deltas}
    shared = deltas["Pass rate, shared scenarios"]
    assert (shared.n_a, shared.n_b) == (10, 10) and result.shared == 10 and result.only_a == 2 and result.only_b == 1
    assert shared.interval == rate_difference(6, 10, 10, 10)
    overall = deltas["Pass rate, overall"]
    assert (overall.a, overall.b) == (8 / 12, 10 / 11)
    latency = deltas["Latency p50"]
    assert latency.interval.delta == pytest.approx(800.0) and latency.verdict == "worse"
    assert deltas["Agent tokens per scenario"].verdict == "better"
    assert deltas["Key-entity accuracy"].interval is None and deltas["Key-entity accuracy"].verdict == ""
    assert differing_flags([("concurrency", "1"), ("modality", "text")],
                           [("concurrency", "2"), ("modality", "text"), ("trials", "3")]) == [
        ("concurrency", "1", "2"), ("trials", None, "3")]


# --- admin -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_admin_links_to_the_site_shows_the_transcript_pretty_json_and_confirms_deletes(tmp_path: Path) -> None:
    admin = get_user_model().objects.create_superuser("root", password="pw-root-123")
    client = _client(admin)
    run = _run(tmp_path)
    result = _result(run)
    change = client.get(f"/admin/scoring/scenarioresult/{result.pk}/change/").content.decode()
    assert 'href="/admin/r/' in change and "View on site" in change
    assert client.get(f"/admin/r/{ContentTypeId.of(ScenarioResult)}/{result.pk}/")["Location"].endswith(
        f"/results/{result.pk}/")
    assert "Hello &lt;b&gt;there&lt;/b&gt;" in change and "heard: hi" in change  # the transcript, escaped
    assert "&quot;scenario_name&quot;: &quot;eva_airline__1_1_3&quot;,\n  &quot;" in change  # metrics.json indented
    confirm = client.get(f"/admin/scoring/run/{run.pk}/delete/").content.decode()
    assert "Are you sure" in confirm and Run.objects.filter(pk=run.pk).exists()
    client.post(f"/admin/scoring/run/{run.pk}/delete/", {"post": "yes"})
    assert not Run.objects.filter(pk=run.pk).exists()


class ContentTypeId:
    @staticmethod
    def of(model) -> int:
        from django.contrib.contenttypes.models import ContentType

        return ContentType.objects.get_for_model(model).pk
