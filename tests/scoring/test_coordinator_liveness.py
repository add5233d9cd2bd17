"""A run's coordinator is known alive or gone from any host: its pid on its own host, its
heartbeat from elsewhere. A run whose coordinator died on another machine is shown stopped and
swept; one whose coordinator still beats is never resumed a second time."""
from __future__ import annotations

import asyncio
import os
import re
import socket
from datetime import timedelta
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings
from django.utils import timezone

from scoring.models import Run
from scoring.runs.liveness import Coordinator, coordinator_state, keep_alive
from scoring.runs.options import RunOptions
from scoring.runs.runner import RunError, run_evaluation
from scoring.web.recovery import recover_orphaned_runs
from scoring.web.run_state import run_state
from tests import warm_python

HOST = socket.gethostname()
NOW = timezone.now()


def _dead_pid() -> int:
    child = warm_python.Popen(["true"])
    child.wait()
    return child.pid


def _state(**fields) -> Coordinator:
    values = {"host": "", "pid": None, "seen_at": None, "this_host": HOST, "now": NOW, "lapse": 60}
    return coordinator_state(**{**values, **fields})


def test_a_coordinator_is_judged_by_its_pid_here_and_by_its_heartbeat_elsewhere() -> None:
    long_ago = NOW - timedelta(seconds=61)
    assert _state(host=HOST, pid=os.getppid()) is Coordinator.ALIVE
    assert _state(host=HOST, pid=os.getpid(), seen_at=long_ago) is Coordinator.ALIVE  # asking the pid wins
    assert _state(host=HOST, pid=_dead_pid(), seen_at=NOW) is Coordinator.GONE
    assert _state(host="worker-2", pid=1, seen_at=NOW - timedelta(seconds=59)) is Coordinator.ALIVE
    assert _state(host="worker-2", pid=1, seen_at=long_ago) is Coordinator.GONE
    assert _state(host="worker-2", pid=1) is Coordinator.UNKNOWN  # a row from before heartbeats
    assert _state() is Coordinator.UNKNOWN


def _run(tmp_path: Path, name: str, **fields) -> Run:
    return Run.objects.create(timestamp=name, session_dir=str((tmp_path / f"eval_{name}").resolve()),
                              status=Run.Status.RUNNING, total_scenarios=3, **fields)


@pytest.mark.django_db
def test_a_run_whose_coordinator_fell_silent_on_another_host_is_shown_stopped_and_swept(tmp_path: Path) -> None:
    silent = _run(tmp_path, "silent", coordinator_host="worker-2", coordinator_pid=7,
                  coordinator_seen_at=timezone.now() - timedelta(seconds=75))
    beating = _run(tmp_path, "beating", coordinator_host="worker-3", coordinator_pid=8,
                   coordinator_seen_at=timezone.now())
    old = _run(tmp_path, "old", coordinator_host="worker-4", coordinator_pid=9)

    state = run_state(silent, may_control=True)
    assert (state.status, state.may_resume, state.may_cancel) == ("interrupted", True, False)
    assert re.search(r"The process that coordinated it \(worker-2, pid 7\) has not been heard from for 7\d s\.",
                     state.notice.text)
    assert run_state(beating, may_control=True).status == "running"
    assert run_state(old, may_control=True).status == "running"

    assert recover_orphaned_runs() == [silent.pk]
    silent.refresh_from_db()
    assert silent.status == Run.Status.INTERRUPTED and re.search(r"fell silent \(7\d s without a heartbeat\)", silent.error)
    assert "--resume silent" in silent.error
    assert re.search(r"has not been heard from for 7\d s", run_state(silent, may_control=True).notice.text)  # the row's
    assert set(Run.objects.filter(status=Run.Status.RUNNING).values_list("timestamp", flat=True)) == {"beating", "old"}


@pytest.mark.django_db
@pytest.mark.parametrize("meanwhile", [
    {"coordinator_seen_at": "now"},  # the coordinator was only slow: it beats again
    {"coordinator_host": "worker-5", "coordinator_pid": 11, "coordinator_seen_at": "now"},  # resumed elsewhere
])
def test_the_sweep_never_overwrites_a_run_heard_from_after_it_was_read(tmp_path: Path, monkeypatch,
                                                                       meanwhile: dict) -> None:
    from scoring.web import recovery

    silent = _run(tmp_path, "taken", coordinator_host="worker-2", coordinator_pid=7,
                  coordinator_seen_at=timezone.now() - timedelta(seconds=300))
    judged = recovery.coordinator_of
    fields = {name: timezone.now() if value == "now" else value for name, value in meanwhile.items()}

    def judged_then_heard_from(run: Run, this_host: str | None = None) -> Coordinator:
        verdict = judged(run, this_host)
        Run.objects.filter(pk=silent.pk).update(**fields)
        return verdict

    monkeypatch.setattr(recovery, "coordinator_of", judged_then_heard_from)
    assert recover_orphaned_runs() == []
    silent.refresh_from_db()
    assert silent.status == Run.Status.RUNNING and silent.coordinator_host == fields.get("coordinator_host", "worker-2")


@pytest.mark.django_db(transaction=True)
async def test_the_heartbeat_is_stamped_by_the_recorded_coordinator_only_while_running(tmp_path: Path) -> None:
    long_ago = timezone.now() - timedelta(hours=1)
    mine = await sync_to_async(_run)(tmp_path, "mine", coordinator_host=HOST, coordinator_pid=os.getpid(),
                                     coordinator_seen_at=long_ago)
    taken = await sync_to_async(_run)(tmp_path, "taken", coordinator_host=HOST, coordinator_pid=os.getppid(),
                                      coordinator_seen_at=long_ago)
    beats = [asyncio.ensure_future(keep_alive(run.pk, lapse=0.3)) for run in (mine, taken)]
    try:
        await asyncio.sleep(0.5)
        seen = dict(await sync_to_async(list)(Run.objects.values_list("timestamp", "coordinator_seen_at")))
        assert seen["mine"] > timezone.now() - timedelta(seconds=2)
        assert seen["taken"] == long_ago  # another process coordinates it now: never made to look alive
        await sync_to_async(Run.objects.filter(pk=mine.pk).update)(status=Run.Status.INTERRUPTED)
        stopped_at = (await sync_to_async(Run.objects.get)(pk=mine.pk)).coordinator_seen_at
        await asyncio.sleep(0.3)
        assert (await sync_to_async(Run.objects.get)(pk=mine.pk)).coordinator_seen_at == stopped_at
    finally:
        for beat in beats:
            beat.cancel()


@pytest.mark.django_db(transaction=True)
async def test_a_run_is_not_resumed_while_its_coordinator_beats_elsewhere(tmp_path: Path) -> None:
    options = {"domain": "eva_airline", "modality": "text", "output_dir": str(tmp_path),
               "scenarios": ["eva_airline__1_1_3", "eva_airline__7_1_1"]}
    first = await run_evaluation(RunOptions(**options))
    stamp = first.session_dir.name.removeprefix("eval_")
    log = first.session_dir / "evaluation_log.txt"
    await sync_to_async(Run.objects.filter(pk=first.run_id).update)(
        status=Run.Status.RUNNING, coordinator_host="worker-2", coordinator_pid=7, coordinator_seen_at=timezone.now())
    before = log.read_text()
    with pytest.raises(RunError, match=rf"eval_{stamp} is still running \(coordinated by worker-2, pid 7, last heard"):
        await run_evaluation(RunOptions(**options, resume=stamp))
    assert log.read_text() == before  # refused before anything was written

    with override_settings(EVASITE_COORDINATOR_LAPSE=30):  # silent for longer than a lapse: gone
        await sync_to_async(Run.objects.filter(pk=first.run_id).update)(
            coordinator_seen_at=timezone.now() - timedelta(seconds=31))
        resumed = await run_evaluation(RunOptions(**options, resume=stamp))
    assert resumed.run_id == first.run_id and resumed.loaded == 2
    run = await sync_to_async(Run.objects.get)(pk=first.run_id)
    assert (run.status, run.coordinator_host, run.coordinator_pid) == (Run.Status.FINISHED, HOST, os.getpid())
    assert run.coordinator_seen_at > timezone.now() - timedelta(seconds=30)


@pytest.mark.django_db
def test_workers_take_over_only_site_runs_on_celery_whose_coordinator_is_gone(tmp_path: Path) -> None:
    from scoring.runs.takeover import TAKEOVER_LIMIT, take_over_orphans

    dead = _dead_pid()

    def site_run(name: str, **fields) -> Run:
        values = {"source": Run.Source.WEB, "executor": "celery", "coordinator_host": HOST, "coordinator_pid": dead,
                  "parsed_args": {"modality": "text", "scenarios": ["eva_airline__1_1_3"], "concurrency": 2}}
        return _run(tmp_path, name, **{**values, **fields})

    lost = site_run("lost", owner=None)
    site_run("from_a_shell", source=Run.Source.CLI)  # its person resumes it
    site_run("local", executor="local")  # coordinated by a web process: the sweep and Resume
    site_run("alive", coordinator_pid=os.getppid())
    site_run("silent_elsewhere", coordinator_host="worker-2", coordinator_seen_at=timezone.now() - timedelta(hours=1))
    site_run("too_often", takeovers=TAKEOVER_LIMIT)
    handed: list[tuple[RunOptions, int | None]] = []
    taken = take_over_orphans(lambda options, owner: handed.append((options, owner)))

    elsewhere = Run.objects.get(timestamp="silent_elsewhere")
    assert sorted(taken) == sorted([lost.pk, elsewhere.pk])
    options = {run_options.resume: run_options for run_options, _ in handed}
    assert set(options) == {"lost", "silent_elsewhere"}
    assert options["lost"].output_dir == str(tmp_path.resolve()) and options["lost"].concurrency == 2
    assert options["lost"].scenarios == ["eva_airline__1_1_3"]
    lost.refresh_from_db()
    assert (lost.status, lost.takeovers) == (Run.Status.INTERRUPTED, 1)
    assert f"is gone; taken over by a worker on {HOST}" in lost.error
    statuses = dict(Run.objects.values_list("timestamp", "status"))
    assert {name for name, status in statuses.items() if status == Run.Status.RUNNING} == {
        "from_a_shell", "local", "alive", "too_often"}
    assert take_over_orphans(lambda options, owner: handed.append((options, owner))) == []  # claimed once
    assert len(handed) == 2
