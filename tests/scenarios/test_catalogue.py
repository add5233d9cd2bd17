"""Registry, naming, eva derivations and scaffold rules (scenarios.md §3–§5, §9, §11, §13, §14)."""
from __future__ import annotations

import json

import pytest

from scenarios import data_root, registry
from scenarios.contract import Actions, EvalScenario, Persona, Task
from scenarios.domains.eva_airline import scaffolds
from scenarios.domains.eva_airline.scenario_base import EvaAirlineBaseScenario
from scenarios.listing import format_domain_list, format_scenario_list
from scenarios.voice_prompts import fmt, spell
from scoring.core.canonical import db_hash

SEEDS = {
    "1.1.2": ("eva_airline__voluntary_date_change", "VoluntaryDateChange"),
    "2.1.1": ("eva_airline__irrops_cancellation", "IrropsCancellation"),
    "3.1.3": ("eva_airline__missed_flight_standby", "MissedFlightStandby"),
    "5.1.1": ("eva_airline__cancellation_refund", "CancellationRefund"),
    "7.2.1": ("eva_airline__escalation_edge_case", "FabricatedDisruption"),
}
GROUPS = {
    "1": ["1.1.3", "1.1.4", "1.1.5", "1.2.1", "1.2.2", "1.2.3", "1.3.1", "1.3.2"],
    "2": ["2.1.2", "2.1.6", "2.2.2", "2.2.4", "2.2.5", "2.3.2", "2.3.4", "2.4.1", "2.4.2"],
    "3": ["3.1.5", "3.3.4"],
    "4": ["4.1.1", "4.1.2", "4.1.3", "4.1.5", "4.2.1", "4.2.4", "4.2.5"],
    "5": ["5.1.2", "5.1.3", "5.1.5", "5.2.1", "5.2.2", "5.2.5", "5.2.6"],
    "6": ["6.1.1", "6.1.4", "6.3.1", "6.3.4"],
    "7": ["7.1.1", "7.2.2", "7.2.5", "7.2.6", "7.2.8", "7.2.9", "7.3.1", "7.4.1"],
}
SCAFFOLD_IDS = [eva_id for ids in GROUPS.values() for eva_id in ids]
GOLD_HASH_112 = "d929bfc083ab92a135fd7c278fbf27100de9f05ffb77c7656d05037f86d8616b"
INITIAL_HASH_112 = "1c8ca8c775d255dcedbcc1641eed5ea6925dc965b672302db254a9dc2c59fb16"


def scaffold(eva_id: str) -> EvaAirlineBaseScenario:
    return registry.resolve_scenario(eva_id)


def guidelines(eva_id: str) -> tuple[str, ...]:
    return scaffold(eva_id).user_actions.guidelines


# -- registry -------------------------------------------------------------------------------------------


def test_fifty_names_in_registry_order():
    names = registry.list_eval_scenarios()
    expected = [name for name, _ in SEEDS.values()] + [
        "eva_airline__" + eva_id.replace(".", "_") for eva_id in SCAFFOLD_IDS
    ]
    assert names == expected
    assert len(names) == 50 and all(name.startswith("eva_airline__") for name in names)
    assert [len(ids) for ids in GROUPS.values()] == [8, 9, 2, 7, 7, 4, 8]
    assert registry.domains() == {"eva_airline": names}
    assert registry.scenarios_in_domain("eva_airline") == names


def test_seed_and_scaffold_classes():
    for eva_id, (name, class_name) in SEEDS.items():
        cls = registry.get_eval_scenario_class(name)
        assert cls.__name__ == class_name and cls.eva_id == eva_id
        assert registry.resolve_scenario(eva_id).name == name
    cls = registry.get_eval_scenario_class("eva_airline__3_1_5")
    assert cls.__name__ == "EvaAirline315" and cls.eva_id == "3.1.5"
    from scenarios.domains.eva_airline import catalogue

    assert catalogue.EvaAirline315 is cls


def test_lookup_helpers():
    assert registry.get_eval_scenario("eva_airline__nope") is None
    scenario = registry.get_eval_scenario("eva_airline__1_1_3")
    assert isinstance(scenario, EvaAirlineBaseScenario) and scenario.eva_id == "1.1.3"
    assert registry.resolve_scenario("eva_airline__1_1_3").eva_id == "1.1.3"
    with pytest.raises(LookupError, match="Unknown scenario '9.9.9'"):
        registry.resolve_scenario("9.9.9")
    registry.load_all()
    assert len(registry.list_eval_scenarios()) == 50  # load_all is idempotent


def test_register_rejects_duplicates_and_non_scenarios():
    class Probe(EvalScenario):
        name = "test__probe"
        success_signals = ("clean_exit",)

    try:
        registry.register_eval_scenario(Probe)
        with pytest.raises(ValueError, match="already registered"):
            registry.register_eval_scenario(Probe)
    finally:
        registry.unregister_eval_scenario("test__probe")
    with pytest.raises(TypeError):
        registry.register_eval_scenario(dict)
    assert "test__probe" not in registry.list_eval_scenarios()


def test_registry_falls_back_to_class_name():
    class Nameless(EvalScenario):
        pass

    try:
        registry.register_eval_scenario(Nameless)
        assert registry.get_eval_scenario("Nameless").name == "Nameless"
    finally:
        registry.unregister_eval_scenario("Nameless")


# -- generic contract ------------------------------------------------------------------------------------


def test_named_class_needs_success_signals():
    with pytest.raises(TypeError, match="success_signals"):

        class Bad(EvalScenario):
            name = "test__bad"

    class Computed(EvalScenario):
        name = "test__computed"

        @property
        def success_signals(self):  # computed whitelists are only checked per instance
            return ("clean_exit",)

    class Inherits(EvaAirlineBaseScenario):
        name = "test__inherits"

    assert Inherits.success_signals == ("db_state_match", "clean_exit")


def test_class_values_win_over_constructor():
    class Declared(EvalScenario):
        name = "test__declared"
        success_signals = ("clean_exit",)
        max_duration = 30

    scenario = Declared(name="other", max_duration=60, description="filled")
    assert scenario.name == "test__declared" and scenario.max_duration == 30
    assert scenario.description == "filled" and scenario.domain == "default"
    with pytest.raises(TypeError):
        Declared(colour="blue")
    eva = registry.get_eval_scenario("eva_airline__1_1_3", domain="x", max_duration=5)
    assert eva.domain == "eva_airline" and eva.max_duration == 900


def test_generic_defaults():
    class Plain(EvalScenario):
        user_persona = Persona(role="tester")
        user_task = Task(goal="test")

    scenario = Plain()
    assert scenario.get_user_tools() == "{}" and scenario.get_agent_tools() == "{}"
    assert scenario.setup_shared_state({}, "agent") == {}
    assert scenario.sync_state({}, {}) == ({}, {})
    assert scenario.get_user_prompt().endswith("# Resources")
    with pytest.raises(ValueError):
        scenario.get_agent_prompt()


def test_save_writes_reference_answer_only_when_truthy(tmp_path):
    class WithAnswer(EvalScenario):
        name = "test__answer"
        success_signals = ("action_match",)
        reference_answer = "done"
        user_persona = agent_persona = Persona(role="tester")
        user_task = agent_task = Task(goal="test")

    WithAnswer().save(tmp_path)
    assert json.loads((tmp_path / "reference_answer.json").read_text()) == {"message": "done"}
    metadata = json.loads((tmp_path / "metadata.json").read_text())
    assert metadata["success_signals"] == ["action_match"] and "expected_db_hash" not in metadata


# -- eva derivations -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", registry.list_eval_scenarios())
def test_every_scenario_resolves_its_data(name):
    scenario = registry.get_eval_scenario(name)
    fixture = json.loads((data_root.get_eval_data_root() / f"{scenario.eva_id}.json").read_text())
    assert scenario.scenario_db == fixture
    assert scenario.current_date == fixture["_current_date"]
    assert isinstance(scenario.expected_scenario_db, dict)
    assert scenario.policy == data_root.agent_config()["instructions"].rstrip()
    assert scenario.confirmation_number == next(iter(fixture["reservations"]))
    assert scenario.domain == "eva_airline" and scenario.max_duration == 900
    assert scenario.success_signals == ("db_state_match", "clean_exit")
    assert scenario.reference_answer is None
    assert scenario.is_seed == (scenario.eva_id in SEEDS)


def test_hash_vectors_of_1_1_2():
    scenario = registry.resolve_scenario("1.1.2")
    assert db_hash(scenario.expected_scenario_db) == GOLD_HASH_112
    assert db_hash(scenario.scenario_db) == INITIAL_HASH_112


def test_eva_id_errors():
    class Empty(EvaAirlineBaseScenario):
        pass

    with pytest.raises(ValueError):
        Empty().scenario_db

    class Unknown(EvaAirlineBaseScenario):
        eva_id = "9.9.9"

    with pytest.raises(KeyError):
        Unknown().expected_scenario_db


def test_shared_state_is_a_private_copy():
    scenario = registry.resolve_scenario("1.1.2")
    agent = scenario.setup_shared_state({}, "agent")
    assert agent == {"db": scenario.scenario_db}
    agent["db"]["reservations"].clear()
    assert scenario.scenario_db["reservations"]
    assert scenario.setup_shared_state({}, "user") == {}
    assert scenario.fresh_db() is not scenario.fresh_db()


def test_agent_resources_and_tools():
    scenario = registry.resolve_scenario("2.1.1")
    tools = json.loads(scenario.get_agent_tools())
    assert list(tools) == [
        "get_reservation", "get_flight_status", "get_disruption_info", "search_rebooking_options",
        "rebook_flight", "cancel_reservation", "process_refund", "assign_seat", "add_baggage_allowance",
        "add_meal_request", "add_to_standby", "issue_travel_credit", "issue_hotel_voucher",
        "issue_meal_voucher", "transfer_to_agent", "end_conversation",
    ]
    assert all(kwargs == {} for kwargs in tools.values())
    assert scenario.agent_resources.information == ("Today's date is 2026-04-14.",)
    assert scenario.agent_persona.background == data_root.agent_config()["role"].rstrip()
    assert scenario.agent_task.goal == data_root.agent_config()["description"]
    assert scenario.agent_actions == Actions()
    user_tools = json.loads(scenario.get_user_tools())
    assert list(user_tools) == ["end_conversation"] and "goodbye" in user_tools["end_conversation"]["description"]


def test_save_snapshot(tmp_path):
    scenario = registry.resolve_scenario("1.1.2")
    target = scenario.save(tmp_path / "scenario_config", expected_db_hash=GOLD_HASH_112)
    files = sorted(path.name for path in target.iterdir())
    assert files == ["agent_prompt.txt", "agent_tools.json", "metadata.json", "user_prompt.txt", "user_tools.json"]
    assert (target / "user_prompt.txt").read_text() == scenario.get_user_prompt()
    assert (target / "agent_prompt.txt").read_text() == scenario.get_agent_prompt()
    assert (target / "agent_tools.json").read_text().startswith('{\n    "get_reservation": {}')
    metadata = json.loads((target / "metadata.json").read_text())
    assert metadata == {
        "name": "eva_airline__voluntary_date_change",
        "domain": "eva_airline",
        "description": scenario.description,
        "max_duration": 900,
        "noise_config": None,
        "ignore_capitalization": False,
        "ignore_punctuation": False,
        "clean_text": False,
        "disallow_extra_items": False,
        "success_signals": ["db_state_match", "clean_exit"],
        "expected_db_hash": GOLD_HASH_112,
    }


# -- spelling helper --------------------------------------------------------------------------------------


def test_spell_and_fmt():
    assert fmt("8JVSDF") == "8JVSDF (spelled out as eight, J, V, S, D, F)"
    assert fmt("ORD") == "ORD (spelled out as O, R, D)"
    assert spell("FAR0UM") == "F, A, R, zero, U, M"
    assert spell("sk-1_#") == "S, K, dash, one, underscore, hash"


# -- scaffold rules ---------------------------------------------------------------------------------------


def test_description_truncation():
    line = data_root.dataset_line("1.1.4")
    head = line["user_goal"]["high_level_user_goal"].strip()[:200]
    assert "." not in head
    assert scaffold("1.1.4").description == head
    assert scaffold("1.1.4").description.endswith("the total extra cost")
    assert scaffold("1.1.3").description.endswith("exactly the same.")
    assert scaffolds.truncate_description("A. B. " + "x" * 300) == "A. B."
    assert scaffolds.truncate_description("  short  ") == "short"


@pytest.mark.parametrize("eva_id", SCAFFOLD_IDS)
def test_scaffold_fields(eva_id):
    line = data_root.dataset_line(eva_id)
    goal, tree = line["user_goal"], line["user_goal"]["decision_tree"]
    scenario = scaffold(eva_id)
    high_level = goal["high_level_user_goal"].strip()
    persona = scenario.user_persona
    assert persona.role == "airline passenger" and persona.name == line["user_config"]["name"].strip()
    assert persona.background == high_level and scenario.user_task.goal == high_level
    assert scenario.user_task.background is None
    assert len(persona.personality) == 300
    assert persona.personality == line["user_config"]["user_persona"].strip()[:300]
    items = scenario.user_actions.guidelines
    assert sum(item.startswith("Must-have: ") for item in items) == len(tree["must_have_criteria"])
    assert sum(item.startswith("Edge case: ") for item in items) == 5
    negotiation = [text.strip() for text in tree["negotiation_behavior"][:3]]
    assert [item for item in items if item in negotiation] == negotiation
    assert items[-1] == f"Escalation: {tree['escalation_behavior'].strip()}"
    assert items[-2] == f"Failure path: {tree['failure_condition'].strip()}"
    steps = scenario.user_actions.instructions
    assert len(steps) == 6 and f"'{goal['starting_utterance']}'" in steps[0]


def identity(eva_id: str) -> str | None:
    prefixes = ("Your confirmation number", "Your last name", "Your first name")
    found = [item for item in guidelines(eva_id) if item.startswith(prefixes)]
    return found[0] if found else None


def test_identity_gaps():
    for eva_id in ("1.2.2", "2.2.5", "4.1.2", "4.2.1", "5.1.3", "6.1.1", "7.2.6"):
        text = identity(eva_id)
        assert text.startswith("Your confirmation number is ") and "Your last name is " in text
        assert "first name" not in text, eva_id
    assert identity("2.2.2") == "Your last name is Foster. Your first name is Hannah."
    assert identity("7.1.1") == "Your first name is Derek."
    assert identity("7.4.1") is None
    full = [eva_id for eva_id in SCAFFOLD_IDS if eva_id not in
            {"1.2.2", "2.2.5", "4.1.2", "4.2.1", "5.1.3", "6.1.1", "7.2.6", "2.2.2", "7.1.1", "7.4.1"}]
    for eva_id in full:
        text = identity(eva_id)
        assert text.count("Your ") == 3, eva_id


def test_identity_aliases():
    info = {"Booking confirmation code": "AB1", "passenger_last_name": "Doe", "first_name_if_requested": "Jo",
            "confirmation_number": ""}
    assert scaffolds.identity_guideline(info) == (
        "Your confirmation number is AB1 (spelled out as A, B, one). Your last name is Doe. Your first name is Jo."
    )
    assert scaffolds.identity_guideline({"Confirmation number": "X", "passenger_first_name": "Y"}) is None


def test_booking_lines():
    expected_513 = (
        "Your booking: SEA (spelled out as S, E, A) to SFO (spelled out as S, F, O) on 2026-04-20 departing at "
        "12:40 (flight SK490 (spelled out as S, K, four, nine, zero))."
    )
    assert expected_513 in guidelines("5.1.3")
    with_flight = {"2.1.2", "2.1.6", "2.2.5", "5.1.3", "6.3.4"}
    for eva_id in SCAFFOLD_IDS:
        booking = [item for item in guidelines(eva_id) if item.startswith("Your booking: ")]
        assert len(booking) == 1, eva_id
        assert booking[0].endswith("))." if eva_id in with_flight else ".")
        assert ("(flight " in booking[0]) == (eva_id in with_flight), eva_id
    # Only the first segment of a round trip is used.
    first_leg = (
        "Your booking: ORD (spelled out as O, R, D) to MIA (spelled out as M, I, A) on 2026-06-05 departing at 13:10."
    )
    assert first_leg in guidelines("1.1.3")
    assert scaffolds.booking_guideline({"original_travel_details": []}) is None
    assert scaffolds.booking_guideline({"original_travel_details": [{"origin": "AUS"}]}) is None
    assert scaffolds.booking_guideline({"original_travel_details": [{"origin": "A", "destination": "B"}]}) == (
        "Your booking: A (spelled out as A) to B (spelled out as B)."
    )


def test_example_1_1_3():
    scenario = scaffold("1.1.3")
    assert scenario.name == "eva_airline__1_1_3" and scenario.user_persona.name == "David Okonkwo"
    assert "'I need to change my flight to an earlier date.'" in scenario.user_actions.instructions[0]
    items = scenario.user_actions.guidelines
    assert items[1] == (
        "Your confirmation number is IM2XU4 (spelled out as I, M, two, X, U, four). Your last name is Okonkwo. "
        "Your first name is David."
    )
    must_haves = sum(item.startswith("Must-have: ") for item in items)
    edge_cases = sum(item.startswith("Edge case: ") for item in items)
    assert (must_haves, edge_cases) == (4, 5) and len(items) == 1 + 2 + 4 + 3 + 5 + 2


def test_scaffold_without_optional_parts():
    line = {
        "id": "9.9.9",
        "user_goal": {"high_level_user_goal": " Goal. ", "decision_tree": {}, "information_required": {}},
        "user_config": {"name": " Ann ", "user_persona": "calm"},
    }
    cls = scaffolds.build_scaffold(line)
    assert cls.name == "eva_airline__9_9_9" and cls.__name__ == "EvaAirline999"
    assert len(cls.user_actions.instructions) == 5
    assert len(cls.user_actions.guidelines) == 1  # only the alphanumeric rule


# -- listing ---------------------------------------------------------------------------------------------


def test_list_format():
    text = format_scenario_list(registry.list_eval_scenarios())
    lines = text.split("\n")
    assert lines[:3] == ["", "eva_airline domain:", "  - eva_airline__1_1_3"]
    assert lines[-5:] == [
        "  - eva_airline__cancellation_refund",
        "  - eva_airline__escalation_edge_case",
        "  - eva_airline__irrops_cancellation",
        "  - eva_airline__missed_flight_standby",
        "  - eva_airline__voluntary_date_change",
    ]
    assert len(lines) == 52
    mixed = format_scenario_list(["zeta", "b__two", "a__one", "alpha", "b__one"])
    assert mixed == (
        "Legacy scenarios:\n  - alpha\n  - zeta\n\na domain:\n  - a__one\n\nb domain:\n  - b__one\n  - b__two"
    )


def test_domain_list_format():
    assert format_domain_list(registry.list_eval_scenarios()) == "Available domains:\n  - eva_airline (50 scenarios)"
    assert format_domain_list(["b__x", "a__y", "a__z", "legacy"]) == (
        "Available domains:\n  - a (2 scenarios)\n  - b (1 scenarios)\n  - (legacy, no domain prefix) (1 scenarios)"
    )
