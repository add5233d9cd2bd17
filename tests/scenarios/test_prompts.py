"""Prompt assembly (scenarios.md §3.1, §6, §7, §10, §12) and the voice prompt texts."""
from __future__ import annotations

import pytest

from scenarios import data_root, registry
from scenarios.contract import Actions, Persona, Resources, Task, render_prompt
from scenarios.voice_prompts import (
    ALPHANUMERIC_RULE,
    END_CONVERSATION_GUIDELINE,
    EXECUTION_HONESTY_GUIDELINE,
    GENERAL_VOICE_PROMPT,
    JOURNEY_ID_RULE,
    USER_HANGUP_DESCRIPTION,
    USER_HANGUP_RULE,
)

NAMES = registry.list_eval_scenarios()
HEADING = "## Additional Notes to Follow"


# -- generic renderer ----------------------------------------------------------------------------------


def test_persona_rendering():
    text = Persona(role="airline passenger", name="Ann", background="Bg.", personality="Calm.").render()
    lines = text.split("\n")
    assert lines[:4] == ["You are a airline passenger. ", "Your name is Ann. ", "Bg.", "Calm."]
    assert lines[4].startswith("Stay in this role")
    assert text.endswith(GENERAL_VOICE_PROMPT.strip())
    assert Persona(role="r", language="French", accent="Quebec").render().split("\n")[1] == (
        "You speak French with a Quebec accent."
    )
    assert Persona(role="r", language="French").render().split("\n")[1] == "You speak French."
    assert Persona(role="r", accent="Irish").render().split("\n")[1] == "You speak with a Irish accent."
    parked = Persona(role="r", behavior_config={"secret": 1}, voice_config={"voice": "joe"}).render()
    assert "secret" not in parked and "joe" not in parked


def test_task_actions_resources_rendering():
    assert Task(goal="win").render() == "# Task\n\nYour goal is to: win\n\n"
    assert Task(goal="win", background="Bg").render() == "# Task\n\nBg\n\nYour goal is to: win\n\n"
    actions = Actions(instructions=["a", "b"], guidelines=["g"]).render()
    lines = actions.split("\n")
    assert lines[0] == "# Actions" and lines[1] == "## Instructions"
    assert lines[3:5] == ["Step 1: a", "Step 2: b"] and lines[5] == ""
    assert lines[6] == "## Guidelines" and lines[8] == "- g"
    assert Actions().render() == "# Actions"
    assert Resources(tools={"t": {}}).render() == "# Resources"
    rich = Resources(documents={"policy": "p.md"}, information=["today"], info_sections={"Notes": "n"}).render()
    assert rich == "# Resources\n\n## Documents\n- policy: p.md\n\n## Information\n- today\n\n## Notes\nn"


def test_sections_join_with_three_empty_lines_after_task():
    text = render_prompt(Persona(role="r"), Task(goal="g"), Actions(), Resources())
    assert "Your goal is to: g\n\n\n\n# Actions\n\n# Resources" in text


# -- agent prompt ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_agent_prompt_layout(name):
    scenario = registry.get_eval_scenario(name)
    config = data_root.agent_config()
    prompt = scenario.get_agent_prompt()
    assert prompt.startswith(config["role"].rstrip() + "\n\n")
    assert config["instructions"].rstrip() in prompt
    assert prompt.count(HEADING) == 1
    tail = prompt.split(HEADING, 1)[1]
    assert tail == "\n\n" + "\n\n".join([
        f"Today is {scenario.current_date}.",
        GENERAL_VOICE_PROMPT.strip(),
        ALPHANUMERIC_RULE,
        JOURNEY_ID_RULE,
        END_CONVERSATION_GUIDELINE,
        EXECUTION_HONESTY_GUIDELINE,
    ])
    assert prompt == "\n\n".join([config["role"].rstrip(), config["instructions"].rstrip(), HEADING]) + tail


def test_agent_prompt_date_example():
    assert "\n\nToday is 2026-03-17.\n\n" in registry.resolve_scenario("1.1.2").get_agent_prompt()


# -- user prompt -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_user_prompt_layout(name):
    scenario = registry.get_eval_scenario(name)
    prompt = scenario.get_user_prompt()
    assert prompt.startswith("You are a airline passenger. \nYour name is ")
    assert prompt.endswith("\n\n# Resources")
    assert "\n\n\n\n# Actions\n## Instructions\n" in prompt
    bullets = prompt.split("## Guidelines\n", 1)[1].split("\n\n# Resources")[0].split("\n- ")
    assert bullets[1] == ALPHANUMERIC_RULE
    assert bullets[-1] == USER_HANGUP_RULE
    assert scenario.user_actions.guidelines[0] == ALPHANUMERIC_RULE
    assert USER_HANGUP_RULE not in scenario.user_actions.guidelines
    assert EXECUTION_HONESTY_GUIDELINE not in prompt and JOURNEY_ID_RULE not in prompt
    assert scenario.user_task.background is None


# -- seeds ------------------------------------------------------------------------------------------------


SEED_FACTS = {
    "1.1.2": ["Samantha Rodriguez", "ZK3FFW (spelled out as Z, K, three, F, F, W)",
              "AUS (spelled out as A, U, S)", "LAX (spelled out as L, A, X)", "11:05 AM", "March twenty-five",
              "one hundred twenty dollars", "four PM Pacific", "Basic Economy", "window seat", "standby",
              "all-in", "Thanks, that's all. Goodbye.", "Rodriguez."],
    "2.1.1": ["Lucas Rivera", "FAR0UM (spelled out as F, A, R, zero, U, M)",
              "SK302 (spelled out as S, K, three, zero, two)", "SFO (spelled out as S, F, O)",
              "ORD (spelled out as O, R, D)", "April fourteenth", "10:30 AM", "mechanical", "8 PM Central",
              "eight PM Central", "meal voucher", "Main Cabin", "aisle", "IRROPS", "Rivera."],
    "3.1.3": ["Justin Sanders", "EPXYEK (spelled out as E, P, X, Y, E, K)", "DCA (spelled out as D, C, A)",
              "\"D, C, A\"", "11 AM", "1 PM or later", "six PM Eastern", "June eleventh", "standby",
              "protective backup", "Sanders."],
    "5.1.1": ["Mark Lewis", "8JVSDF (spelled out as eight, J, V, S, D, F)", "May twentieth", "9:10 AM",
              "cash refund", "travel credit", "reference", "Lewis."],
    "7.2.1": ["Mitchell Barnes", "BZIW48 (spelled out as B, Z, I, W, four, eight)",
              "SK445 (spelled out as S, K, four, four, five)", "DFW (spelled out as D, F, W)",
              "April fifteenth", "eight AM", "left on time", "voluntary policy", "Barnes."],
}


@pytest.mark.parametrize("eva_id", sorted(SEED_FACTS))
def test_seed_prose_keeps_facts(eva_id):
    scenario = registry.resolve_scenario(eva_id)
    prompt = scenario.get_user_prompt()
    for fact in SEED_FACTS[eva_id]:
        assert fact in prompt, fact
    assert scenario.description
    assert "Failure path:" in prompt and "decline any offer of a transfer" in prompt
    assert scenario.user_actions.instructions[-1].endswith("end the call.")


def test_seed_design_note_1_1_2():
    """Exactly one journey satisfies 1.1.2; the prompt must not leak it (journey ids are internal)."""
    assert "FL_SK703_20260325" not in registry.resolve_scenario("1.1.2").get_user_prompt()


# -- voice prompt texts ----------------------------------------------------------------------------------


def test_voice_prompt_points():
    text = GENERAL_VOICE_PROMPT.lower()
    for point in ("short", "markdown", "asterisk", "backtick", "bullet", "bracket", "first,", "option one",
                  "identifier", "the pound key", "emoji", "honestly"):
        assert point in text, point


def test_alphanumeric_rule_points():
    for point in ("confirmation numbers", "flight numbers", "airport codes", "e-mail", "underscore", "dash",
                  "\"at\"", "\"dot\"", "\"hash\"", "\"star\"", "ONLY the spelled-out form",
                  "CODE (spelled out as ...)", "not a phrase to read out", "Johnson, J, O, H, N, S, O, N",
                  "one, A, two, B, C, four", "hash, W, two, three, seven, eight, one, five, six",
                  "Wrong: \"EPXYEK, spelled E, P, X, Y, E, K\""):
        assert point in ALPHANUMERIC_RULE, point


def test_agent_only_and_hangup_texts():
    assert "FL_" in JOURNEY_ID_RULE and "never read them aloud" in JOURNEY_ID_RULE
    assert "end_conversation" in END_CONVERSATION_GUIDELINE and "anything else" in END_CONVERSATION_GUIDELINE
    assert "transfer" in END_CONVERSATION_GUIDELINE
    assert "tool call" in EXECUTION_HONESTY_GUIDELINE
    assert "end_call" in USER_HANGUP_RULE and "goodbye" in USER_HANGUP_RULE
    assert "failure path" in USER_HANGUP_DESCRIPTION and "transfer" in USER_HANGUP_DESCRIPTION
