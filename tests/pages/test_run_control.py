"""Runs started, cancelled and resumed from the site: one validation with the CLI, the same
session directory as the CLI, Cancel/Resume through the --resume path, owner-or-staff control,
and runs whose coordinating process died marked interrupted."""
from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.test import AsyncClient

from evasite.asgi import application
from scoring.models import Run
from scoring.runs.options import add_run_arguments, options_from_mapping
from scoring.runs.runner import run_evaluation
from scoring.web import launcher
from scoring.web.forms import RunForm
from scoring.web.recovery import recover_orphaned_runs
from tests.pages.web_helpers import form_data, post
from tests import warm_python

REPO = Path(__file__).resolve().parents[2]
TEN = [f"eva_airline__{n}" for n in ("1_1_3", "1_1_4", "1_1_5", "1_2_1", "1_2_2", "1_2_3", "1_3_1", "1_3_2",
                                     "2_1_2", "voluntary_date_change")]


def _form_errors(**overrides: str) -> list[str]:
    form = RunForm(form_data(**overrides))
    assert not form.is_valid()
    return form.non_field_errors()


def test_the_form_refuses_what_the_cli_refuses_with_the_cli_message(db) -> None:
    cases = {"--concurrency 0": {"concurrency": "0"},
             "--concurrency 2 --agent-url ws://127.0.0.1:1": {"concurrency": "2", "agent_url": "ws://127.0.0.1:1"},
             "--trials 0": {"trials": "0"}}
    for flags, fields in cases.items():
        cli = warm_python.run([sys.executable, "manage.py", "run_eval", "--modality", "text", *flags.split()],
                              cwd=REPO, capture_output=True, text=True, timeout=120)
        assert cli.returncode == 2
        message = cli.stderr.strip().splitlines()[-1].removeprefix("run_eval: error: ")
        assert _form_errors(**fields) == [message], flags


def test_form_scope_picks_scenarios_or_a_domain(db) -> None:
    form = RunForm(form_data(scope="domain", domain="eva_airline", scenarios=[]))
    assert form.is_valid(), form.errors
    assert form.options.domain == "eva_airline" and form.options.scenarios == []
    assert _form_errors(scope="pick", scenarios=[]) == ["Pick at least one scenario (--scenarios)."]


async def _wait_until(predicate, timeout: float = 60.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await sync_to_async(predicate)():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


def _files(session: Path) -> set[str]:
    return {str(p.relative_to(session)) for p in session.rglob("*") if p.is_file()}


@pytest.mark.django_db(transaction=True)
async def test_a_web_run_writes_what_the_cli_writes_with_the_same_flags(tmp_path: Path, settings) -> None:
    settings.EVASITE_OUTPUT_DIR = str(tmp_path / "web")
    user = await sync_to_async(get_user_model().objects.create_user)("starter", password="pw-starter-123")
    client = AsyncClient()
    await client.aforce_login(user)
    response = await post(client, "/runs/new/", form_data(scenarios=["eva_airline__1_1_3", "eva_airline__1_1_4"]))
    run_id = int(response["Location"].rstrip("/").rsplit("/", 1)[1])
    await _wait_until(lambda: Run.objects.get(pk=run_id).status != Run.Status.RUNNING)
    web = await sync_to_async(Run.objects.get)(pk=run_id)
    assert web.status == Run.Status.FINISHED and web.completed_scenarios == 2

    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    argv = ["--scenarios", "eva_airline__1_1_3", "eva_airline__1_1_4", "--modality", "text", "--agent-model", "gold-replay",
            "--concurrency", "1", "--output-dir", str(tmp_path / "web")]  # the form's concurrency
    cli = await run_evaluation(options_from_mapping(vars(parser.parse_args(argv))), argv=argv)
    cli_run = await sync_to_async(Run.objects.get)(pk=cli.run_id)
    assert _files(Path(web.session_dir)) == _files(cli.session_dir)
    assert web.parsed_args == cli_run.parsed_args
    assert [r["scenario_name"] for r in cli.metrics] == ["eva_airline__1_1_3", "eva_airline__1_1_4"]


@pytest.mark.django_db(transaction=True)
async def test_cancel_interrupts_and_resume_completes_keeping_finished_work(tmp_path: Path, settings) -> None:
    settings.EVASITE_OUTPUT_DIR = str(tmp_path / "out")
    users = get_user_model().objects
    owner = await sync_to_async(users.create_user)("owner", password="pw-owner-123")
    other = await sync_to_async(users.create_user)("other", password="pw-other-123")
    owner_client, other_client = AsyncClient(), AsyncClient()
    await owner_client.aforce_login(owner)
    await other_client.aforce_login(other)

    response = await post(owner_client, "/runs/new/", form_data(scenarios=TEN))
    run_id = int(response["Location"].rstrip("/").rsplit("/", 1)[1])
    await _wait_until(lambda: Run.objects.get(pk=run_id).completed_scenarios >= 1)
    watcher = WebsocketCommunicator(application, f"/ws/runs/{run_id}/", headers=[
        (b"origin", b"http://testserver"), (b"cookie", f"sessionid={owner_client.cookies['sessionid'].value}".encode())])
    assert (await watcher.connect(timeout=30))[0]  # channels waits 1 s by default: too little beside a run
    assert (await post(other_client, f"/runs/{run_id}/cancel/")).status_code == 403
    assert (await post(owner_client, f"/runs/{run_id}/cancel/")).status_code == 302
    events = []
    while not events or events[-1]["type"] != "run.ended":
        events.append(await watcher.receive_json_from(timeout=10))
    assert events[-1]["status"] == "interrupted" and "resume with --resume" in events[-1]["error"]
    await watcher.disconnect()
    run = await sync_to_async(Run.objects.get)(pk=run_id)
    assert run.status == Run.Status.INTERRUPTED and not launcher.running_here(run_id)
    done_before = run.completed_scenarios
    assert 1 <= done_before < len(TEN)
    page = (await owner_client.get(f"/runs/{run_id}/")).content.decode()
    assert ">Resume</button>" in page and ">Cancel</button>" not in page

    assert (await post(other_client, f"/runs/{run_id}/resume/")).status_code == 403
    assert (await post(owner_client, f"/runs/{run_id}/resume/")).status_code == 302
    await _wait_until(lambda: Run.objects.get(pk=run_id).status != Run.Status.RUNNING)
    run = await sync_to_async(Run.objects.get)(pk=run_id)
    assert run.status == Run.Status.FINISHED and run.completed_scenarios == len(TEN)
    log = (Path(run.session_dir) / "evaluation_log.txt").read_text()
    assert "RESUMING" in log and log.count("; loaded") >= done_before
    assert await sync_to_async(Run.objects.count)() == 1  # the same row, not a new run


def _dead_pid() -> int:
    child = warm_python.Popen(["true"])
    child.wait()
    return child.pid


@pytest.mark.django_db
def test_runs_whose_coordinator_died_are_marked_interrupted(tmp_path: Path) -> None:
    host = socket.gethostname()

    def run(name: str, **fields) -> Run:
        return Run.objects.create(timestamp=name, session_dir=str(tmp_path / name), **fields)

    dead = run("dead", coordinator_host=host, coordinator_pid=_dead_pid())
    alive = run("alive", coordinator_host=host, coordinator_pid=os.getppid())  # a live CLI elsewhere
    elsewhere = run("elsewhere", coordinator_host=host + "-other", coordinator_pid=_dead_pid())
    unknown = run("unknown")
    finished = run("finished", coordinator_host=host, coordinator_pid=_dead_pid(), status=Run.Status.FINISHED)
    assert recover_orphaned_runs() == [dead.pk]
    statuses = dict(Run.objects.values_list("timestamp", "status"))
    assert statuses == {"dead": "interrupted", "alive": "running", "elsewhere": "running", "unknown": "running",
                        "finished": "finished"}
    assert "resume with --resume dead" in Run.objects.get(pk=dead.pk).error
    assert {alive.pk, elsewhere.pk, unknown.pk, finished.pk}.isdisjoint(recover_orphaned_runs())


@pytest.mark.django_db
def test_the_first_request_a_server_process_handles_recovers_orphans(tmp_path: Path, monkeypatch) -> None:
    from django.test import Client

    from scoring.web import recovery

    monkeypatch.setattr(recovery, "_swept", False)  # as in a freshly started server process
    orphan = Run.objects.create(timestamp="orphan", session_dir=str(tmp_path / "o"),
                                coordinator_host=socket.gethostname(), coordinator_pid=_dead_pid())
    assert Client().get("/accounts/login/").status_code == 200  # any request, even a login page
    orphan.refresh_from_db()
    assert orphan.status == Run.Status.INTERRUPTED
