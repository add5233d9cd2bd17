"""The call page (login, the brief, its controls, never the gold) and the scenario history page
(human calls beside simulated runs)."""
from __future__ import annotations

import pytest
from django.test import Client

from scoring import services
from scoring.core.canonical import db_hash
from scoring.models import Run
from tests.gold import leaked_gold

SEED = "eva_airline__voluntary_date_change"
pytestmark = pytest.mark.django_db


@pytest.fixture
def tester(django_user_model):
    return django_user_model.objects.create_user("tina", password="pw-tina-123")


@pytest.fixture
def client(tester) -> Client:
    client = Client()
    client.force_login(tester)
    return client


def test_the_call_page_needs_a_login():
    response = Client().get(f"/scenarios/{SEED}/call/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_call_page_shows_the_brief_and_the_controls_but_no_gold(client):
    from scenarios.registry import get_eval_scenario

    page = client.get(f"/scenarios/{SEED}/call/").content.decode()
    for control in ('id="call-button">Call<', ">Hang up<", ">Type instead<", ">Send<", ">Your message<",
                    'role="log"', 'aria-live="polite"'):
        assert control in page, control
    assert "Rodriguez" in page and "Z, K, three, F, F, W" in page
    scenario = get_eval_scenario(SEED)
    assert not leaked_gold(scenario, page)  # neither the hash nor the flight, seat or journeys it writes
    assert 'value="listening" selected' in page  # the built-in agent that listens is the default
    assert client.get("/scenarios/no_such_scenario/call/").status_code == 404


def _record(run_dir, *, source: str, owner=None, successful: bool, stop: str, p50: float) -> Run:
    run = services.run_open(session_dir=run_dir, timestamp="20261201_000000", source=source,
                            parsed_args={"agent_model": "listening", "modality": "voice", "user_model": "scripted"},
                            scenario_names=[SEED], total_scenarios=1, owner_id=owner.pk if owner else None)
    metrics = {"scenario_name": SEED, "is_successful": successful, "stop_reason": stop, "total_turns": 9,
               "latency_stats": {"count": 3, "p50_ms": p50}}
    services.scenario_result_record(run_id=run.pk, metrics=metrics, position=0, trial=1, final_db=None)
    return run


def test_the_history_page_lists_human_calls_beside_simulated_runs(client, tester, tmp_path):
    _record(tmp_path / "a", source="human", owner=tester, successful=False, stop="[SIMULATOR_EXIT]", p50=1234.4)
    _record(tmp_path / "b", source="cli", successful=True, stop="[EXIT]", p50=987.0)
    page = client.get(f"/scenarios/{SEED}/").content.decode()
    human, simulated = page.split('id="simulated-runs"')
    assert "tina" in human and "[SIMULATOR_EXIT]" in human and "1234" in human and "badge fail" in human
    assert "scripted" in simulated and "[EXIT]" in simulated and "987" in simulated and "badge pass" in simulated
    assert f"/scenarios/{SEED}/call/" in page
    from scenarios.services import scenario_mirror_sync

    scenario_mirror_sync(hash_fn=db_hash)
    assert f'href="/scenarios/{SEED}/"' in client.get("/scenarios/").content.decode()
    assert client.get("/scenarios/nope/").status_code == 404
