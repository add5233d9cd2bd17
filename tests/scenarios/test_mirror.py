"""The ``Scenario`` mirror, its admin and the two management commands."""
from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.admin.sites import site
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import RequestFactory

from scenarios import registry, selectors
from scenarios.listing import format_domain_list, format_scenario_list
from scenarios.models import Scenario
from scenarios.services import scenario_mirror_sync
from scoring.core.canonical import db_hash

GOLD_HASH_112 = "d929bfc083ab92a135fd7c278fbf27100de9f05ffb77c7656d05037f86d8616b"
INITIAL_HASH_112 = "1c8ca8c775d255dcedbcc1641eed5ea6925dc965b672302db254a9dc2c59fb16"


def load() -> str:
    out = StringIO()
    call_command("load_scenarios", stdout=out)
    return out.getvalue().strip()


@pytest.mark.django_db
def test_load_command_is_idempotent():
    assert load() == "Scenarios: 50 created, 0 updated, 0 deleted, 0 unchanged."
    first = {row.name: row.updated_at for row in Scenario.objects.all()}
    assert load() == "Scenarios: 0 created, 0 updated, 0 deleted, 50 unchanged."
    assert {row.name: row.updated_at for row in Scenario.objects.all()} == first
    assert list(Scenario.objects.values_list("name", flat=True)) == registry.list_eval_scenarios()


@pytest.mark.django_db
def test_mirror_row_contents():
    scenario_mirror_sync(hash_fn=db_hash)
    row = selectors.scenario_get(name="eva_airline__voluntary_date_change")
    scenario = registry.resolve_scenario("1.1.2")
    fields = (row.eva_id, row.domain, row.position, row.is_seed, row.max_duration)
    assert fields == ("1.1.2", "eva_airline", 0, True, 900)
    assert row.success_signals == ["db_state_match", "clean_exit"]
    assert (row.expected_db_hash, row.initial_db_hash) == (GOLD_HASH_112, INITIAL_HASH_112)
    assert row.user_prompt == scenario.get_user_prompt() and row.agent_prompt == scenario.get_agent_prompt()
    assert row.description == scenario.description
    assert selectors.scenario_list(is_seed=True).count() == 5
    assert selectors.scenario_list(domain="eva_airline").first().name == "eva_airline__voluntary_date_change"
    assert selectors.scenario_get(name="nope") is None


@pytest.mark.django_db
def test_sync_updates_changed_and_deletes_stale_rows():
    scenario_mirror_sync(hash_fn=db_hash)
    Scenario.objects.filter(name="eva_airline__1_1_3").update(description="tampered")
    Scenario.objects.create(name="eva_airline__gone", domain="eva_airline", position=99)
    counts = scenario_mirror_sync(hash_fn=db_hash)
    assert counts == {"created": 0, "updated": 1, "deleted": 1, "unchanged": 49}
    assert not Scenario.objects.filter(name="eva_airline__gone").exists()
    assert Scenario.objects.get(name="eva_airline__1_1_3").description != "tampered"


@pytest.mark.django_db
def test_load_command_uses_the_configured_hasher():
    load()
    assert Scenario.objects.get(eva_id="1.1.2").expected_db_hash == GOLD_HASH_112


@pytest.mark.django_db
def test_bad_data_root_raises_command_error_and_keeps_rows(monkeypatch, tmp_path):
    scenario_mirror_sync(hash_fn=db_hash)
    monkeypatch.setenv("EVAL_DATA_ROOT", str(tmp_path))
    with pytest.raises(CommandError, match=str(tmp_path)):
        load()
    assert Scenario.objects.count() == 50


def test_list_command():
    out = StringIO()
    call_command("list_scenarios", stdout=out)
    assert out.getvalue() == format_scenario_list(registry.list_eval_scenarios()) + "\n"
    out = StringIO()
    call_command("list_scenarios", "--domains", stdout=out)
    assert out.getvalue() == format_domain_list(registry.list_eval_scenarios()) + "\n"


def test_admin_is_read_only():
    model_admin = site._registry[Scenario]
    request = RequestFactory().get("/admin/scenarios/scenario/")
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)
    assert model_admin.list_filter == ("domain", "is_seed")
    assert model_admin.search_fields == ("name", "description")
