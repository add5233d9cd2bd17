"""The listening agent's and the listening passenger's decisions on hand-made contexts: what they
do with what they heard (identity lookups with exactly the parsed values, bounded re-asks, the
passenger's accept/refuse rules)."""
from __future__ import annotations

import json

import pytest

from scenarios.data_root import initial_db
from scenarios.registry import load_all, resolve_scenario
from voice.bots.models.base import END_TOOL
from voice.bots.models.heard_identity import parse_confirmation
from voice.bots.models.listening import GIVE_UP, MAX_LOOKUPS, NO_DEAL, OFFER_MARKER, REASK_MARKER, ListeningAgentPolicy
from voice.bots.models.scripted import ACCEPT, GOODBYE, ScriptedPassengerPolicy, offer_verdict

GOAL_DATE = "I want to move my March 20 flight from A, U, S to L, A, X to March 25, with a window seat assigned."
GOAL_REFUND = "I want to cancel my trip and get a full refund to my original credit card rather than a travel credit."


def agent(text: str) -> dict:
    return {"role": "assistant", "content": text}


def caller(text: str) -> dict:
    return {"role": "user", "content": text}


def call(name: str, arguments: dict, result: dict, call_id: str) -> list[dict]:
    return [{"role": "assistant", "tool_calls": [{"id": call_id, "type": "function",
                                                  "function": {"name": name, "arguments": json.dumps(arguments)}}]},
            {"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)}]


# -- passenger: accept / refuse ------------------------------------------------------------------

@pytest.mark.parametrize("offer, verdict", [
    ("i can move you to flight s k seven zero three on march twenty fifth shall i go ahead", None),
    ("I can move you to flight SK703 on March 25th. Shall I go ahead?", None),
    ("I can move you to flight SK703 on March 23. Shall I go ahead?", "No, that is not the date I need. I want to travel on March 25."),
    ("I can move you to flight SK703 on march fifty. Shall I go ahead?", None),  # no date heard: nothing to object to
])
def test_passenger_accepts_only_the_dates_of_its_goal(offer, verdict):
    assert offer_verdict(GOAL_DATE, offer) == verdict


def test_passenger_wants_refund_not_credit_and_insists_once():
    credit = "I can cancel that flight and issue a travel credit of 312 dollars. Shall I go ahead?"
    assert offer_verdict(GOAL_REFUND, credit).startswith("No, I want a full refund")
    assert offer_verdict(GOAL_REFUND, credit, insisted=True) is None
    assert offer_verdict(GOAL_REFUND, "I can refund 312 dollars to your original payment method.") is None
    wants_credit = "I want to cancel my return and receive a travel credit for it."
    assert offer_verdict(wants_credit, "I can refund 99 dollars. Shall I go ahead?").startswith("No, I would like a travel credit")


@pytest.fixture(scope="module")
def seed():
    load_all()
    return resolve_scenario("1.1.2")


def test_passenger_answers_what_it_is_asked(seed):
    policy = ScriptedPassengerPolicy(seed.get_user_prompt)
    opener = policy.decide([caller("Thank you for calling. How can I help you today?")])
    assert "March twenty-fifth" in opener.text
    history = [caller("Hello"), agent(opener.text)]
    asked = policy.decide(history + [caller("May I have your confirmation number and the last name on the booking?")])
    assert asked.text == ("My confirmation number is Z, K, three, F, F, W and my last name is Rodriguez, "
                          "R, O, D, R, I, G, U, E, Z.")
    name_only = policy.decide(history + [caller("Thank you. And the last name on the booking, please?")])
    assert "confirmation" not in name_only.text and "Rodriguez" in name_only.text
    again = policy.decide(history + [caller("I could not find a booking under C, K, three. Could you spell the confirmation number and your last name again?")])
    assert "confirmation number is Zurich, Kilo, three, Frank, Frank, William and" in again.text
    assert parse_confirmation(again.text) == "ZK3FFW"  # the agent reads the careful spelling back as the code
    wrong_date = policy.decide(history + [caller("I can move you to flight S K 7 0 3 on March 23. Shall I go ahead?")])
    assert wrong_date.text.startswith("No") and "March 25" in wrong_date.text and not wrong_date.calls
    right = policy.decide(history + [caller("I can move you to flight S K 7 0 3 on March 25th. Shall I go ahead?")])
    assert right.text == ACCEPT
    bye = policy.decide(history + [caller("All done. Is there anything else I can help you with?")])
    assert bye.text == GOODBYE and bye.calls == [(END_TOOL, {})]


def test_passenger_without_a_code_in_its_prompt_says_so():
    load_all()
    policy = ScriptedPassengerPolicy(resolve_scenario("2.2.2").get_user_prompt)
    answer = policy.decide([caller("Hi"), agent("My flight is delayed."), caller("May I have your confirmation number and last name?")])
    assert "don't have my confirmation number" in answer.text and "Foster, F, O, S, T, E, R" in answer.text


# -- listening agent -----------------------------------------------------------------------------

def _agent_policy() -> ListeningAgentPolicy:
    return ListeningAgentPolicy(lambda: {"db": initial_db("1.1.2")})


OPENING = [caller("Hello"), agent("Thank you for calling the airline. How can I help you today?"),
           caller("Hi, I need to change my flight to March twenty-fifth."),
           agent("I can help with that. May I have your confirmation number and the last name on the booking?")]
FAILED = {"status": "error", "error_type": "reservation_not_found", "message": "not found"}


def test_agent_looks_up_exactly_what_it_heard():
    policy = _agent_policy()
    policy.decide([caller("Hello")])
    decision = policy.decide(OPENING + [caller("My confirmation number is C, K, 3, F, F, W and my last name is Rodriguez.")])
    assert decision.calls == [("get_reservation", {"confirmation_number": "CK3FFW", "last_name": "Rodriguez"})]


def test_agent_asks_again_after_a_failed_lookup_then_gives_up():
    policy = _agent_policy()
    policy.decide([caller("Hello")])
    history = list(OPENING)
    for attempt in range(1, MAX_LOOKUPS + 1):
        history += [caller("My confirmation number is C, K, 3, F, F, W and my last name is Rodriguez.")]
        lookup = policy.decide(history)
        assert lookup.calls == [("get_reservation", {"confirmation_number": "CK3FFW", "last_name": "Rodriguez"})]
        history += call("get_reservation", lookup.calls[0][1], FAILED, f"c{attempt}")
        answer = policy.decide(history)
        if attempt < MAX_LOOKUPS:
            assert REASK_MARKER in answer.text and "C, K, three, F, F, W" in answer.text and not answer.calls
            history.append(agent(answer.text))
    assert answer.text == GIVE_UP and answer.calls == [(END_TOOL, {})]


def test_agent_gives_up_at_its_last_failed_lookup_even_when_the_caller_spoke_again_first():
    # Under load the caller's next turn can reach the context before the agent answered its last
    # failed lookup: that turn must not buy a lookup beyond the limit (a CI run saw four).
    policy = _agent_policy()
    policy.decide([caller("Hello")])
    spelled = caller("My confirmation number is C, K, 3, F, F, W and my last name is Rodriguez.")
    history = list(OPENING)
    for attempt in range(1, MAX_LOOKUPS + 1):
        history += [spelled, *call("get_reservation", {"confirmation_number": "CK3FFW", "last_name": "Rodriguez"},
                                   FAILED, f"c{attempt}")]
        if attempt < MAX_LOOKUPS:
            history.append(agent("I'm sorry, I could not find that booking."))
    answer = policy.decide(history + [spelled])
    assert answer.text == GIVE_UP and answer.calls == [(END_TOOL, {})]


def test_agent_starts_no_lookup_while_one_is_running():
    # Under load a caller's turn (here the second half of a split spelling) reached the context
    # while the third lookup ran; the agent started a fourth beside it (a CI run).
    policy = _agent_policy()
    policy.decide([caller("Hello")])
    spelled = caller("My confirmation number is C, K, 3, F, F, W and my last name is Rodriguez.")
    history = list(OPENING)
    for attempt in (1, 2):
        history += [spelled, *call("get_reservation", {"confirmation_number": "CK3FFW", "last_name": "Rodriguez"},
                                   FAILED, f"c{attempt}"), agent("I'm sorry, I could not find that booking.")]
    running = call("get_reservation", {"confirmation_number": "CK3FFW", "last_name": "Rodriguez"}, FAILED, "c3")
    running[1]["content"] = "IN_PROGRESS"  # pipecat's placeholder while a call runs: no failure yet
    history += [spelled, *running, caller("W in my last name is Rodriguez.")]
    for waited in (False, True):
        answer = policy.decide(history, waited=waited)
        assert answer.wait and not answer.calls and not answer.text, answer
    history[-2]["content"] = json.dumps(FAILED)  # the third lookup comes back: now the limit speaks
    answer = policy.decide(history)
    assert answer.text == GIVE_UP and answer.calls == [(END_TOOL, {})]
    history[-2]["content"] = "CANCELLED"  # an interruption stopped it instead: nothing to wait for
    answer = policy.decide(history)
    assert not answer.wait and (answer.text or answer.calls), answer


def test_agent_asks_for_the_missing_part_and_joins_turns():
    policy = _agent_policy()
    policy.decide([caller("Hello")])
    only_code = OPENING + [caller("My confirmation number is Z, K, 3, F, F, W.")]
    ask = policy.decide(only_code)
    assert "last name" in ask.text and not ask.calls
    both = policy.decide(only_code + [agent(ask.text), caller("It's Rodriguez, R, O, D, R, I, G, U, E, Z.")])
    # The name answer has no "last name" cue of its own, so nothing is invented: it asks again.
    assert not both.calls
    named = policy.decide(only_code + [agent(ask.text), caller("My last name is Rodriguez.")])
    assert named.calls == [("get_reservation", {"confirmation_number": "ZK3FFW", "last_name": "Rodriguez"})]


def test_agent_offers_before_writing_and_respects_a_refusal(seed):
    policy = _agent_policy()
    policy.decide([caller("Hello")])
    history = OPENING + [caller("My confirmation number is Z, K, 3, F, F, W and my last name is Rodriguez.")]
    lookup = policy.decide(history)
    reservation = {"status": "success", "reservation": {"confirmation_number": "ZK3FFW"}}
    history += call("get_reservation", lookup.calls[0][1], reservation, "c1")
    search = policy.decide(history)
    assert search.calls[0][0] == "search_rebooking_options"
    history += call(*search.calls[0], {"status": "success", "options": []}, "c2")
    offer = policy.decide(history)
    assert OFFER_MARKER in offer.text and "S, K, seven, zero, three on March 25" in offer.text and not offer.calls
    history.append(agent(offer.text))
    again = policy.decide(history + [caller("No, that is not the date I need.")])
    assert again.text == offer.text
    refused_twice = history + [caller("No."), agent(again.text), caller("No, I want March 25.")]
    assert policy.decide(refused_twice).text == NO_DEAL
    accepted = policy.decide(history + [caller("Yes, please go ahead.")])
    assert accepted.calls and accepted.calls[0][0] == "rebook_flight"
    assert accepted.calls[0][1]["confirmation_number"] == "ZK3FFW"


def test_a_turn_heard_in_parts_is_waited_for_once_and_read_whole(seed):
    policy = ScriptedPassengerPolicy(seed.get_user_prompt)
    history = [caller("Hello"), agent("Hi, I need to change my flight to March twenty-fifth.")]
    first = policy.decide(history + [caller("I can help with that.")])
    assert first.wait and not first.text
    whole = policy.decide(history + [caller("I can help with that."), caller("May I have your confirmation number and last name?")])
    assert whole.text.startswith("My confirmation number is Z, K, three")
    # An offer heard sentence by sentence: still waiting after its second statement, answered at its question.
    offer = [caller("Thank you."), caller("I can move you to flight S, K, seven, zero, three on March 25."),
             caller("I can also assign you an aisle seat.")]
    assert policy.decide(history + offer).wait
    assert policy.decide(history + offer + [caller("Shall I go ahead?")]).text == "Yes, please go ahead."
    # pocketsphinx writes no punctuation: nothing to go on, so it answers
    assert policy.decide(history + [caller("i can help with that")]).text == "Sorry, could you say that again?"


def test_agent_waits_while_the_caller_is_still_spelling():
    policy = _agent_policy()
    policy.decide([caller("Hello")])
    partial = OPENING + [caller("Let me spell it again. My confirmation number is CS and Zebra, K as in Kilo, free,")]
    assert policy.decide(partial).wait
    rest = partial + [caller("F as in Frank, F as in Frank, W as in William and my last name is Rodriguez.")]
    # The code was split across the two parts: they are read together.
    assert policy.decide(rest).calls == [("get_reservation", {"confirmation_number": "ZK3FFW", "last_name": "Rodriguez"})]


async def test_a_wait_is_bounded_then_answered(monkeypatch):
    from pipecat.frames.frames import LLMContextFrame, LLMTextFrame
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.tests.utils import SleepFrame, run_test

    from voice.bots.models import base
    from voice.bots.models.base import BuiltinLLMService, Decision

    class Hesitant:
        model_name = "hesitant"

        def decide(self, messages, *, waited=False):
            return Decision(text="Sorry, could you say that again?") if waited else Decision(wait=True)

    monkeypatch.setattr(base, "WAIT_SECS", 0.2)
    context = LLMContext([{"role": "user", "content": "I can help with that."}])
    down, _ = await run_test(BuiltinLLMService(Hesitant()), frames_to_send=[LLMContextFrame(context), SleepFrame(sleep=0.6)])
    assert [f.text for f in down if isinstance(f, LLMTextFrame)] == ["Sorry, could you say that again?"]
    # New input while waiting supersedes the wait: only the new decision speaks.
    down, _ = await run_test(BuiltinLLMService(Hesitant()), frames_to_send=[
        LLMContextFrame(context), SleepFrame(sleep=0.05), LLMContextFrame(context), SleepFrame(sleep=0.6)])
    assert len([f for f in down if isinstance(f, LLMTextFrame)]) == 1


async def test_a_wait_holds_while_the_other_side_speaks_again(monkeypatch):
    """The agent paused between sentences and goes on: the clock must not answer over it; the
    turn that its speech ends (the collector always ends one) is answered instead."""
    from pipecat.frames.frames import LLMContextFrame, LLMTextFrame, VADUserStartedSpeakingFrame
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.tests.utils import SleepFrame, run_test

    from voice.bots.models import base
    from voice.bots.models.base import BuiltinLLMService, Decision

    class Hesitant:
        model_name = "hesitant"

        def decide(self, messages, *, waited=False):
            if len(messages) > 1:
                return Decision(text="My confirmation number is Z, K, three.")
            return Decision(text="Sorry, could you say that again?") if waited else Decision(wait=True)

    monkeypatch.setattr(base, "WAIT_SECS", 0.2)
    first = LLMContext([{"role": "user", "content": "I can help with that."}])
    both = LLMContext([{"role": "user", "content": "I can help with that."},
                       {"role": "user", "content": "May I have your confirmation number?"}])
    down, _ = await run_test(BuiltinLLMService(Hesitant()), frames_to_send=[
        LLMContextFrame(first), SleepFrame(sleep=0.05), VADUserStartedSpeakingFrame(), SleepFrame(sleep=0.6),
        LLMContextFrame(both), SleepFrame(sleep=0.3)])
    assert [f.text for f in down if isinstance(f, LLMTextFrame)] == ["My confirmation number is Z, K, three."]
