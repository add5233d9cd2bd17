"""How the listening agent words an offer and a read-back of its write calls.

Pure module. Codes and flight numbers are spelled per the voice rule (scenarios.voice_prompts.spell),
journey ids are never read out (they become a flight number and a date), so the agent->user
direction carries the scenario's entities for the passenger's ASR to get right or wrong.
"""
from __future__ import annotations

import re
from typing import Any, Optional

from scenarios.voice_prompts import spell
from voice.entities import spoken_date

READ_TOOLS = frozenset({"get_reservation", "search_rebooking_options", "get_flight_status", "get_disruption_info"})


def is_write(tool: str) -> bool:
    return tool not in READ_TOOLS


def journey_flight(journey_id: Any) -> Optional[tuple[str, str]]:
    """'FL_SK703_20260325' -> ('SK703', 'March 25'); None for anything else."""
    match = re.fullmatch(r"FL_([A-Z0-9]+)_(\d{4})(\d{2})(\d{2})", str(journey_id or ""))
    if not match:
        return None
    fn, y, m, d = match.groups()
    return fn, spoken_date(f"{y}-{m}-{d}") or ""


def _flight_phrase(journey_id: Any) -> str:
    found = journey_flight(journey_id)
    if not found:
        return "the flight"
    fn, when = found
    return f"flight {spell(fn)} on {when}"


def _dollars(value: Any) -> str:
    try:
        amount = float(value)
    except (TypeError, ValueError):
        return "the amount due"
    return f"{int(amount)} dollars" if amount.is_integer() else f"{amount:.2f} dollars"


def _phrase(tool: str, params: dict[str, Any]) -> Optional[tuple[str, str]]:
    """(offer wording, done wording) of one write call; None for calls not worth saying."""
    if tool == "rebook_flight":
        target = _flight_phrase(params.get("new_journey_id"))
        return f"move you to {target}", f"you are now booked on {target}"
    if tool == "cancel_reservation":
        return "cancel that flight", "the flight is cancelled"
    if tool == "process_refund":
        amount = _dollars(params.get("refund_amount"))
        return f"refund {amount} to your original payment method", f"a refund of {amount} is on its way"
    if tool == "issue_travel_credit":
        amount = _dollars(params.get("amount"))
        return f"issue a travel credit of {amount}", f"a travel credit of {amount} has been issued"
    if tool == "assign_seat":
        pref = str(params.get("seat_preference") or "").replace("_", " ")
        seat = f"a {pref} seat" if pref and pref != "any" else "a seat"
        return f"assign you {seat}", f"{seat} is assigned"
    if tool == "issue_meal_voucher":
        return "issue you a meal voucher", "a meal voucher has been issued"
    if tool == "issue_hotel_voucher":
        return "issue you a hotel voucher", "a hotel voucher has been issued"
    if tool == "add_to_standby":
        target = _flight_phrase(params.get("journey_id"))
        return f"add you to the standby list for {target}", f"you are on the standby list for {target}"
    return None


def _sentences(parts: list[str]) -> str:
    """One short sentence per part: the TTS synthesises a sentence before its first audio, so
    short sentences keep the agent's time to first audio low."""
    return " ".join(part[0].upper() + part[1:] + "." for part in parts)


def offer_text(writes: list[tuple[str, dict[str, Any]]], marker: str) -> str:
    phrases = [p[0] for p in (_phrase(t, a) for t, a in writes) if p]
    if not phrases:
        return f"Thank you. I can make that change. {marker}"
    return f"Thank you. I can {phrases[0]}." + "".join(f" I can also {p}." for p in phrases[1:]) + f" {marker}"


def readback_text(code: Optional[str], writes: list[tuple[str, dict[str, Any]]], marker: str) -> str:
    phrases = [p[1] for p in (_phrase(t, a) for t, a in writes) if p]
    where = f" on reservation {spell(code)}" if code else ""
    if phrases:
        done_on = f" Your reservation is {spell(code)}." if code else ""
        return f"All done.{done_on} {_sentences(phrases)} {marker}"
    return f"Thank you, I have checked everything{where} and no change was needed. {marker}"
