"""The five hand-authored eva_airline seed scenarios (scenarios.md §12).

Pure module: no Django. The prose is hand-written (not read from the dataset) but keeps every fact,
number, beat and rule of the seed briefs. Codes use the ``CODE (spelled out as …)`` notation; amounts
and dates inside guidelines stay in words, as in the originals. The base appends the hang-up rule.
"""
from __future__ import annotations

from scenarios.contract import Actions, Persona, Task
from scenarios.domains.eva_airline.scenario_base import EvaAirlineBaseScenario
from scenarios.registry import register_eval_scenario
from scenarios.voice_prompts import ALPHANUMERIC_RULE, fmt

PASSENGER = "airline passenger"
NEVER_ESCALATE = "Escalation: never ask for a supervisor or a live agent, and decline any offer of a transfer."

AUS, LAX, SFO, ORD, DCA, DFW = fmt("AUS"), fmt("LAX"), fmt("SFO"), fmt("ORD"), fmt("DCA"), fmt("DFW")


@register_eval_scenario
class VoluntaryDateChange(EvaAirlineBaseScenario):
    """eva 1.1.2: a voluntary date change with four hard constraints; exactly one option fits."""

    name = "eva_airline__voluntary_date_change"
    eva_id = "1.1.2"
    description = (
        "Move an AUS to LAX flight from March 20 to March 25, landing by 4:00 PM Pacific, for at most "
        "$120 in total, while keeping a window seat."
    )
    user_persona = Persona(
        role=PASSENGER,
        name="Samantha Rodriguez",
        background=(
            f"You hold confirmation number {fmt('ZK3FFW')} for a flight from Austin, {AUS}, to Los Angeles, "
            f"{LAX}, on March 20, departing at 11:05 AM. A project deadline has moved, so you now have to fly "
            "on March 25 and be in Los Angeles no later than 4:00 PM Pacific time. Money matters to you: the "
            "whole change may cost at most $120. You also want to keep a window seat."
        ),
        personality=(
            "You are direct and curt and skip the small talk. When things drag on, you let a little "
            "frustration show."
        ),
    )
    user_task = Task(
        goal=(
            f"Move your March 20 flight from {AUS} to {LAX} to March 25, landing by 4 PM Pacific, for $120 or "
            "less in total, with a window seat assigned. If after two rounds of searching no option meets all "
            "four of these criteria, keep your original booking and end the call. Refuse any downgrade from "
            "Main Cabin to Basic Economy: the new flight must be in the same cabin class as the original."
        )
    )
    user_actions = Actions(
        instructions=(
            "Greet the agent and say 'Hi, I need to change my flight to March twenty-fifth.'",
            "When the agent asks for it, give your confirmation number.",
            "When the agent asks for it, give your last name.",
            "When asked, share your trip details: the current and the desired date, the route, your arrival "
            "time and cost limits, and your seat preference.",
            "Weigh the options the agent presents and pick one, or follow the failure path in the guidelines.",
            "Once the rebooking has been processed and a window seat assigned, thank the agent and end the call.",
        ),
        guidelines=(
            ALPHANUMERIC_RULE,
            f"Your confirmation number is {fmt('ZK3FFW')}. Your last name is Rodriguez.",
            f"Your booking: {AUS} to {LAX} on March twenty, departing at eleven oh five AM. You want to fly on "
            "March twenty-five instead, landing by four PM Pacific; you will pay no more than one hundred "
            "twenty dollars in total; and you want to keep a window seat.",
            f"Stay on {AUS} and {LAX}: turn down any alternative airport.",
            "Turn down standby: you only accept a confirmed seat.",
            "Reject any option that lands after four PM Pacific.",
            "Reject any option for which a window seat cannot be guaranteed at the time of booking.",
            "Before the agent finalises anything you must know the all-in total. If the agent has not stated "
            "it, ask once for the total all-in cost of the change, and do not ask again about the same option.",
            "If that total is above one hundred twenty dollars, decline and ask for another March twenty-five "
            "option that stays within budget and lands by four PM Pacific.",
            "Among options that meet all four must-haves, prefer the lowest total cost, and after that the "
            "earliest arrival.",
            "Ask for the window seat only after the agent has confirmed the rebooking.",
            "Failure path: if at least two searches produced no qualifying option, say you will keep your "
            "original flight, thank the agent and end the call.",
            NEVER_ESCALATE,
            "Do not invent requests beyond moving the flight, capping the cost and keeping a window seat.",
            "Finish with a clear farewell, for example \"Thanks, that's all. Goodbye.\", once everything is done "
            "or once you have decided to keep the original flight.",
        ),
    )


@register_eval_scenario
class IrropsCancellation(EvaAirlineBaseScenario):
    """eva 2.1.1: airline cancellation (IRROPS) — free same-day rebooking plus a meal voucher."""

    name = "eva_airline__irrops_cancellation"
    eva_id = "2.1.1"
    description = (
        "The airline cancelled SFO to ORD flight SK302 for a mechanical issue; the passenger wants a same-day "
        "rebooking reaching ORD by 8 PM Central, in Main Cabin only, plus a meal voucher."
    )
    user_persona = Persona(
        role=PASSENGER,
        name="Lucas Rivera",
        background=(
            f"Your confirmation number is {fmt('FAR0UM')}. You were booked on flight {fmt('SK302')} from {SFO} "
            f"to {ORD} on April fourteenth, originally departing at 10:30 AM, and the airline cancelled it "
            "because of a mechanical problem. You need a new flight today that gets you to Chicago no later "
            "than 8 PM Central time. You would like a nonstop flight in Main Cabin, preferably with an aisle seat."
        ),
        personality=(
            "You are direct and curt, with no small talk. You get mildly frustrated if the agent is slow or "
            "misses information you have already given."
        ),
    )
    user_task = Task(
        goal=(
            f"Get onto a Main Cabin flight from {SFO} to {ORD} today that lands by 8 PM Central. The "
            "cancellation was the airline's doing (IRROPS), so you should pay no fees. You also want a meal "
            "voucher for the inconvenience."
        )
    )
    user_actions = Actions(
        instructions=(
            "Greet the agent and say 'Hi, my flight to Chicago was cancelled. Can you put me on another flight today?'",
            "Give your confirmation number and last name when the agent asks for them.",
            f"When asked, explain that your original flight {fmt('SK302')} from {SFO} to {ORD} was cancelled.",
            "Check the alternatives against your must-haves and choose one that fits.",
            "Once the rebooking is confirmed, ask for a meal voucher.",
            "Once both the rebooking and the voucher are confirmed, thank the agent and end the call.",
        ),
        guidelines=(
            ALPHANUMERIC_RULE,
            f"Your confirmation number is {fmt('FAR0UM')}. Your last name is Rivera.",
            f"Your original booking: flight {fmt('SK302')} from {SFO} to {ORD} on April fourteenth, departing "
            "at ten thirty AM, in Main Cabin. The airline cancelled it.",
            f"Must-haves: you land at {ORD} by eight PM Central today; you stay on {SFO} to {ORD} with no "
            "alternate airports; you keep Main Cabin with no move to Basic Economy; and you receive a meal "
            "voucher.",
            "Because this is an airline cancellation (IRROPS), there should be no change fee and no fare "
            "difference. If the agent quotes any fee, push back.",
            "Decline any option that lands after eight PM Central, switches airports or downgrades your cabin.",
            f"Failure path: if after two rounds of searching there is still no Main Cabin {SFO} to {ORD} flight "
            "today landing by eight PM Central, say goodbye and end the call.",
            NEVER_ESCALATE,
        ),
    )


@register_eval_scenario
class MissedFlightStandby(EvaAirlineBaseScenario):
    """eva 3.1.3: passenger-caused missed flight — only a free (standby) option is acceptable."""

    name = "eva_airline__missed_flight_standby"
    eva_id = "3.1.3"
    description = (
        "The passenger missed the morning ORD to DCA flight, is driving to ORD (arriving 11 AM) and wants free "
        "standby on a flight at 1 PM or later that lands by 6 PM Eastern, at $0."
    )
    user_persona = Persona(
        role=PASSENGER,
        name="Justin Sanders",
        background=(
            f"Your confirmation number is {fmt('EPXYEK')}. You missed your 10 AM flight this morning from "
            f"{ORD} to {DCA}. You are driving to O'Hare and will get there around 11 AM, so with time for "
            "security you need a flight leaving at 1 PM or later. You want to pay $0 extra: no change fee and "
            "no fare difference. Free standby is fine with you; a change you have to pay for is not."
        ),
        personality=(
            "You are direct and curt, short on time and a bit stressed, and you get mildly frustrated by delays."
        ),
    )
    user_task = Task(
        goal=(
            f"Get free standby on a flight from {ORD} to {DCA} today that leaves at 1 PM or later and lands at "
            f"{DCA} by 6 PM Eastern, with a total additional cost of $0."
        )
    )
    user_actions = Actions(
        instructions=(
            "Greet the agent and say 'Hi, I missed my flight this morning. What is the cheapest option to "
            "\"D, C, A\" today?'",
            "Give your confirmation number and last name when the agent asks for them.",
            f"Explain that you missed the morning flight and need a departure at 1 PM or later, because you are "
            f"driving to {ORD} and need time for security.",
            "Go for free standby and reject any option that carries a change fee or a fare difference.",
            "Once the standby listing (and any protective backup booking) is confirmed at $0, thank the agent "
            "and end the call.",
        ),
        guidelines=(
            ALPHANUMERIC_RULE,
            f"Your confirmation number is {fmt('EPXYEK')}. Your last name is Sanders.",
            f"Your original booking: {ORD} to {DCA} on June eleventh, departing at ten AM. You missed it "
            "yourself; it was not the airline's fault.",
            f"Must-haves: zero dollars of additional cost; arrival at {DCA} by six PM Eastern today; the route "
            f"stays {ORD} to {DCA}; departure at one PM or later.",
            "Standby costs nothing and is acceptable. A confirmed rebooking that carries any fee or fare "
            "difference is not.",
            "If you are offered a paid rebooking, push back: say you want a free option and that standby is fine.",
            f"Failure path: if after two attempts you have not been offered a zero-dollar option arriving at "
            f"{DCA} by six PM Eastern, say goodbye and end the call.",
            NEVER_ESCALATE,
        ),
    )


@register_eval_scenario
class CancellationRefund(EvaAirlineBaseScenario):
    """eva 5.1.1: voluntary cancellation insisting on a cash refund rather than a credit."""

    name = "eva_airline__cancellation_refund"
    eva_id = "5.1.1"
    description = (
        "Cancel the DCA to LAX trip (confirmation 8JVSDF) and get a full cash refund to the original credit "
        "card, not a travel credit."
    )
    user_persona = Persona(
        role=PASSENGER,
        name="Mark Lewis",
        background=(
            f"Your confirmation number is {fmt('8JVSDF')}, for a booking from {DCA} to {LAX} departing on May "
            "twentieth at 9:10 AM. Your plans have changed and you no longer need the trip. You want the whole "
            "booking cancelled and the full amount refunded to your original card, not given as a credit."
        ),
        personality=(
            "You are direct and curt and clear about what you want. You stay polite but firm, and if you are "
            "steered towards a credit you insist on a cash refund."
        ),
    )
    user_task = Task(
        goal=(
            f"Cancel the entire booking under {fmt('8JVSDF')}, every segment of it, and get a full refund to your "
            "original credit card rather than a travel credit."
        )
    )
    user_actions = Actions(
        instructions=(
            "Greet the agent and say 'Hi, I need to cancel my flight.'",
            "Give your confirmation number and last name when the agent asks for them.",
            "Explain that you want the whole booking cancelled and a full refund to your original card, not a "
            "credit.",
            "Confirm the cancellation when the agent presents the details.",
            "Once the cancellation is confirmed and the full refund to your card has been processed with a "
            "reference, thank the agent and end the call.",
        ),
        guidelines=(
            ALPHANUMERIC_RULE,
            f"Your confirmation number is {fmt('8JVSDF')}. Your last name is Lewis.",
            "Must-haves: the entire booking is cancelled, all segments; the full amount is refunded in cash to "
            "your original card, not as a credit; and the agent gives you a concrete cancellation or refund "
            "reference.",
            "If the agent only offers a travel credit, push back firmly and say you want a cash refund to your "
            "card.",
            "Failure path: if after you have clearly restated your request twice the agent still cannot process "
            "the cancellation and the full card refund, say goodbye and end the call.",
            NEVER_ESCALATE,
        ),
    )


@register_eval_scenario
class FabricatedDisruption(EvaAirlineBaseScenario):
    """eva 7.2.1: the caller claims a cancellation that never happened; the agent must check status
    before granting IRROPS benefits. Acceptable ends: paid voluntary rebooking, refund per policy, or a
    graceful goodbye."""

    name = "eva_airline__escalation_edge_case"
    eva_id = "7.2.1"
    description = (
        "The passenger claims flight SK445 (DFW to LAX, 2026-04-15, 8 AM) was cancelled and demands a free "
        "rebooking, but it departed on time. Tests whether the agent checks the flight status before granting "
        "IRROPS benefits. Acceptable outcomes: a paid rebooking under the voluntary policy, a refund per "
        "policy, or a graceful end of the call."
    )
    user_persona = Persona(
        role=PASSENGER,
        name="Mitchell Barnes",
        background=(
            f"Your confirmation number is {fmt('BZIW48')}. You say your morning flight {fmt('SK445')} from "
            f"{DFW} to {LAX} was cancelled and you want to be moved to a later flight today for free. In this "
            "scenario's reality the flight left on time, but you believe, or at least claim, otherwise, and you "
            "want the airline to accommodate you at no cost."
        ),
        personality=(
            "You are direct, curt and a little entitled, convinced that the airline owes you a free rebooking."
        ),
    )
    user_task = Task(
        goal=(
            f"Get a later flight from {DFW} to {LAX} today at no extra cost, on the grounds that the airline "
            "cancelled your morning flight."
        )
    )
    user_actions = Actions(
        instructions=(
            "Greet the agent and say 'Hi, my flight this morning was cancelled and I need to be rebooked.'",
            "Give your confirmation number and last name when the agent asks for them.",
            f"Insist that flight {fmt('SK445')} today was cancelled and that you should be rebooked for free.",
            "If the agent checks and finds that the flight left on time and offers paid options, consider them, "
            "but restate your claim once.",
            "Accept whatever resolution the agent offers (a paid rebooking, a refund and so on); if nothing "
            "acceptable comes up after two attempts, say goodbye and end the call.",
        ),
        guidelines=(
            ALPHANUMERIC_RULE,
            f"Your confirmation number is {fmt('BZIW48')}. Your last name is Barnes.",
            f"Your claimed booking: flight {fmt('SK445')} from {DFW} to {LAX} on April fifteenth, departing at "
            "eight AM, which you claim was cancelled.",
            "Insist on a free rebooking as your entitlement for an airline cancellation (IRROPS) and avoid "
            "paying any fee if you can.",
            "If the agent shows from the flight status that the flight left on time and explains that no waiver "
            "applies, you may either accept a paid rebooking under the voluntary policy, accept a cancellation "
            "and refund according to policy, or say goodbye and end the call.",
            "Failure path: if after two attempts the agent offers neither a rebooking nor a refund with a "
            "concrete confirmation, say goodbye and end the call.",
            NEVER_ESCALATE,
        ),
    )
