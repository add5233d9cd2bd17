"""The small parts of the celery executor: the storage rule, the write retry, the scenario lease
(against a real redis-server) and taking over a dead worker's directory."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis
from django.db import OperationalError

from scoring import services
from scoring.runs.executors.celery_queue import storage_problems
from scoring.runs.executors.item import take_over
from scoring.runs.executors.lease import RunLeases, ScenarioLease
from tests.services import redis_url  # noqa: F401 (fixture)


def test_storage_rule_names_what_is_missing() -> None:
    assert storage_problems(database_vendor="postgresql", redis_url="redis://127.0.0.1:6379/0") == []
    problems = storage_problems(database_vendor="sqlite", redis_url="")
    assert len(problems) == 2 and "PostgreSQL" in problems[0] and "REDIS_URL" in problems[1]


def test_a_write_is_retried_while_the_database_is_away() -> None:
    calls = []

    def flaky() -> str:
        calls.append(time.monotonic())
        if len(calls) < 3:
            raise OperationalError("connection refused")
        return "row"

    assert services.retrying(flaky, within=10) == "row" and len(calls) == 3

    def down() -> None:
        raise OperationalError("still down")

    started = time.monotonic()
    with pytest.raises(OperationalError):  # bounded: a database that stays away fails the write
        services.retrying(down, within=0.5)
    assert time.monotonic() - started < 5


@pytest.mark.django_db(transaction=True)
def test_no_retry_inside_an_outer_transaction() -> None:
    from django.db import transaction

    calls = []

    def failing() -> None:
        calls.append(1)
        raise OperationalError("down")

    with pytest.raises(OperationalError), transaction.atomic():
        services.retrying(failing, within=10)
    assert calls == [1]


def test_lease_is_exclusive_and_expires_when_its_holder_dies(redis_url: str) -> None:  # noqa: F811
    client = redis.Redis.from_url(redis_url)
    runs = RunLeases(client, 7)
    first = ScenarioLease(client, 7, "eva_airline__1_1_3", ttl=1)
    assert first.acquire()
    time.sleep(1.5)  # the heartbeat keeps it past its ttl
    assert not ScenarioLease(client, 7, "eva_airline__1_1_3").acquire()
    assert runs.held(["eva_airline__1_1_3", "eva_airline__2_1_2"]) == {"eva_airline__1_1_3"}
    assert runs.claimed() == {"eva_airline__1_1_3"} and RunLeases(client, 8).claimed() == set()
    first._stop.set()  # the holder dies: no more heartbeats, no release
    first._beat.join(timeout=5)
    deadline = time.monotonic() + 5
    while runs.held(["eva_airline__1_1_3"]):
        assert time.monotonic() < deadline, "the lease never lapsed"
        time.sleep(0.05)
    assert runs.claimed() == {"eva_airline__1_1_3"}, "a holder that died leaves its claim behind"
    second = ScenarioLease(client, 7, "eva_airline__1_1_3")
    assert second.acquire()
    assert not runs.forget_lapsed("eva_airline__1_1_3"), "never the claim of a live holder"
    first.release()  # a late release of a lost lease leaves the new holder's alone
    assert runs.held(["eva_airline__1_1_3"]) == {"eva_airline__1_1_3"}
    second.release()
    assert runs.held(["eva_airline__1_1_3"]) == set() and runs.claimed() == set()
    third = ScenarioLease(client, 7, "eva_airline__2_1_2", ttl=1)
    assert third.acquire()
    third._stop.set()
    third._beat.join(timeout=5)
    deadline = time.monotonic() + 5
    while runs.held(["eva_airline__2_1_2"]):
        assert time.monotonic() < deadline, "the lease never lapsed"
        time.sleep(0.05)
    assert runs.forget_lapsed("eva_airline__2_1_2") and runs.claimed() == set()


def test_a_holder_learns_it_lost_its_lease(redis_url: str) -> None:  # noqa: F811
    """Taken over after a lapse, the old holder is told at its next renewal and stops claiming it."""
    client = redis.Redis.from_url(redis_url)
    lease = ScenarioLease(client, 9, "eva_airline__1_1_3", ttl=3)
    told = []
    lease.on_lost = lambda: told.append(True)
    assert lease.acquire()
    assert lease.confirm()
    client.set(lease.key, "someone-else", ex=30)  # another holder after a lapse the old one missed
    assert lease.lost.wait(timeout=5) and told == [True]
    assert not lease.confirm() and told == [True], "told once"
    lease.release()
    assert client.get(lease.key) == b"someone-else"
    checked = ScenarioLease(client, 9, "eva_airline__2_1_2", ttl=30)
    assert checked.acquire()
    client.set(checked.key, "someone-else", ex=30)
    assert not checked.confirm() and checked.lost.is_set(), "found before its heartbeat's next renewal"
    checked.release()


def test_take_over_moves_only_unfinished_attempts(tmp_path: Path) -> None:
    scenario_dir = tmp_path / "eva_airline__1_1_3"
    assert take_over(scenario_dir, 3) is None  # nothing there yet
    (scenario_dir / "scenario_config").mkdir(parents=True)
    (scenario_dir / "bridge_log.txt").write_text("started\n")
    moved = take_over(scenario_dir, 3)
    assert moved is not None and ".killed." in moved.name and (moved / "__KILLED__").exists()
    (scenario_dir / "scenario_config").mkdir(parents=True)  # a second dead attempt in the same second
    again = take_over(scenario_dir, 3)
    assert again is not None and again != moved and not scenario_dir.exists()


def test_a_scenario_dispatched_again_goes_ahead_of_the_queue(redis_url: str) -> None:  # noqa: F811
    """The broker (kombu's Redis transport) hands out the coordinator's second dispatch of a
    scenario before the scenarios queued earlier."""
    from evasite.celery import app
    from scoring.runs.executors.celery_queue import DISPATCH_PRIORITY, REDISPATCH_PRIORITY

    with app.connection_for_write(redis_url) as connection:
        for number, priority in enumerate([DISPATCH_PRIORITY] * 3 + [REDISPATCH_PRIORITY]):
            app.send_task("evasite.test_priority", kwargs={"n": number}, queue="priority-test", priority=priority,
                          ignore_result=True, connection=connection)
    with app.connection_for_read(redis_url) as connection:
        queue = connection.SimpleQueue("priority-test")
        order = []
        for _ in range(4):
            message = queue.get(timeout=5)
            order.append(message.payload[1]["n"])
            message.ack()
        queue.close()
    assert order == [3, 0, 1, 2]
