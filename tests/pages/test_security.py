"""The site behind a login: every page refused to anonymous users (unless results are opened
read-only on purpose), CSRF on every form, and a key pasted into a URL field kept out of the
database, the pages, the logs and the artifacts."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.test import AsyncClient, Client, override_settings

from scoring.models import Run, ScenarioResult
from scoring.runs.options import RunOptions, redact_url, redact_urls_in
from scoring.web import launcher
from tests.pages.web_helpers import form_data, post

LEAKS = ("sk-leak-user", "sk-leak-pass", "sk-leak-query")
LEAKY_JUDGE_URL = "http://sk-leak-user:sk-leak-pass@127.0.0.1:9/v1/chat/completions?api_key=sk-leak-query"


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Run, ScenarioResult]:
    run = Run.objects.create(timestamp="20260101_000000", session_dir=str(tmp_path / "eval_20260101_000000"),
                             status=Run.Status.FINISHED)
    result = ScenarioResult.objects.create(run=run, scenario_name="eva_airline__1_1_3", metrics={"turns": []})
    return run, result


def _pages(run: Run, result: ScenarioResult) -> list[str]:
    return ["/", "/runs/new/", "/runs/compare/", f"/runs/compare/?a={run.pk}&b={run.pk}", f"/runs/{run.pk}/",
            f"/runs/{run.pk}/artifacts.zip", f"/results/{result.pk}/", f"/results/{result.pk}/artifact/metrics.json",
            "/scenarios/"]


@pytest.mark.django_db
def test_every_page_sends_anonymous_users_to_the_login(stored) -> None:
    anonymous = Client()
    for url in _pages(*stored):
        response = anonymous.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/?next="), url
    run = stored[0]
    for url in (f"/runs/{run.pk}/cancel/", f"/runs/{run.pk}/resume/", "/runs/new/"):
        assert anonymous.post(url).status_code == 302, url
    assert anonymous.get("/admin/").status_code == 302
    assert anonymous.get("/accounts/login/").status_code == 200


@pytest.mark.django_db
@override_settings(EVASITE_PUBLIC_RESULTS=True)
def test_public_results_opens_only_the_read_only_pages(stored) -> None:
    run, result = stored
    anonymous = Client()
    expected = {"/": str(run), f"/runs/{run.pk}/": "Summary", f"/results/{result.pk}/": "eva_airline__1_1_3",
                f"/runs/compare/?a={run.pk}&b={run.pk}": "the same run", f"/runs/{run.pk}/panels/": 'id="run-results"'}
    for url, text in expected.items():
        response = anonymous.get(url)
        page = response.content.decode()
        assert response.status_code == 200 and text in page, url
        # Read-only: no control, no review or annotation form for someone who is not logged in.
        for control in (">Cancel</button>", ">Resume</button>", 'id="review-form"', "Name, tags and note", "Log out"):
            assert control not in page, (url, control)
    assert anonymous.post(f"/results/{result.pk}/review/", {"verdict": "agrees"}).status_code == 302
    assert anonymous.post(f"/runs/{run.pk}/annotate/", {"name": "x"}).status_code == 302
    result.refresh_from_db()
    run.refresh_from_db()
    assert not result.reviewed and run.name == ""
    assert anonymous.get("/runs/new/").status_code == 302
    assert anonymous.post(f"/runs/{run.pk}/resume/").status_code == 302


@pytest.mark.django_db
def test_posts_without_a_csrf_token_are_refused(stored) -> None:
    run, _ = stored
    user = get_user_model().objects.create_user("poster", password="pw-poster-123")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    for url in ("/runs/new/", f"/runs/{run.pk}/cancel/", f"/runs/{run.pk}/resume/", "/accounts/logout/",
                f"/runs/{run.pk}/annotate/", f"/results/{ScenarioResult.objects.get().pk}/review/"):
        assert client.post(url, {"scope": "all"}).status_code == 403, url
    assert not Run.objects.exclude(pk=run.pk).exists()


def test_url_redaction_covers_userinfo_and_query() -> None:
    assert redact_url("https://key123@host:8000/v1") == "https://<redacted>@host:8000/v1"
    assert redact_url("http://h/v1?api_key=sk-1&b=2") == "http://h/v1?api_key=<redacted>&b=<redacted>"
    assert redact_url("ws://127.0.0.1:8765") == "ws://127.0.0.1:8765"
    assert redact_urls_in("--agent-llm-url=http://u:p@h/v1") == "--agent-llm-url=http://<redacted>@h/v1"
    options = RunOptions(agent_llm_url="http://u:sk-2@h/v1?k=sk-3", judge_api_key="sk-4")
    flat = str(options.redacted())
    assert "sk-2" not in flat and "sk-3" not in flat and "sk-4" not in flat


@pytest.mark.django_db(transaction=True)
async def test_a_key_pasted_into_a_url_field_reaches_nothing(tmp_path: Path, settings) -> None:
    settings.EVASITE_OUTPUT_DIR = str(tmp_path / "out")
    user = await sync_to_async(get_user_model().objects.create_user)("paster", password="pw-paster-123")
    client = AsyncClient()
    await client.aforce_login(user)
    response = await post(client, "/runs/new/", form_data(judge_url=LEAKY_JUDGE_URL, judge_model="judge"))
    assert response.status_code == 302
    run_id = int(response["Location"].rstrip("/").rsplit("/", 1)[1])
    for _ in range(300):
        if not launcher.running_here(run_id):
            break
        await asyncio.sleep(0.1)
    run = await sync_to_async(Run.objects.get)(pk=run_id)
    assert run.status == Run.Status.FINISHED and run.owner_id == user.pk and run.source == Run.Source.WEB
    assert run.parsed_args["judge_url"] == "http://<redacted>@127.0.0.1:9/v1/chat/completions?api_key=<redacted>"
    stored = str(run.parsed_args) + run.error + run.summary_text + "".join(
        str(m) for m in await sync_to_async(list)(ScenarioResult.objects.filter(run=run).values_list("metrics", flat=True)))
    pages = "".join([(await client.get(url)).content.decode(errors="replace")
                     for url in (f"/runs/{run_id}/", "/")])
    files = [p for p in Path(run.session_dir).rglob("*") if p.is_file()]
    assert any(p.name == "judge_result.json" for p in files)  # the judge was asked, and failed
    for leak in LEAKS:
        assert leak not in stored and leak not in pages
        for path in files:
            assert leak.encode() not in path.read_bytes(), path
