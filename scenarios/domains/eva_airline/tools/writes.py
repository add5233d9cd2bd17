"""The write and system tools other than rebook (tools.md §3.6–§3.15).

Each runs its lookups and checks first, then mutates, then records one action. Upstream quirks
(flat cancellation fee, colliding voucher/credit codes, loose standby) are kept on purpose (§10).
"""
from __future__ import annotations

import copy
from typing import Any

from .errors import ToolError
from .lookups import booking, booking_fare, reservation, segments
from .session import ToolSession

CANCELLATION_FEE = 100
REFUNDABLE_REASONS = frozenset({"irrops_refund", "24_hour_rule"})
SEAT_ROW_BASE = {"basic_economy": 25, "main_cabin": 20, "premium_economy": 10, "business": 5, "first": 1}
SEAT_LETTERS = {"window": "A", "middle": "B", "aisle": "C", "no_preference": "C"}
ALL_SEAT_TYPES = ("window", "aisle", "middle")
MEAL_VOUCHER_AMOUNTS = {
    "delay_over_2_hours": 12, "delay_over_4_hours": 15, "cancellation_wait_same_day": 15, "irrops_overnight": 25,
}
MAX_HOTEL_NIGHTS = 3


def _padded(number: int) -> str:
    return f"{number:03d}"


def cancel_reservation(session: ToolSession, p: dict[str, Any]) -> dict:
    """Cancel one journey's live booking; only reports what is refundable, moves no money."""
    db = session.db
    conf, journey_id, reason = p["confirmation_number"], p["journey_id"], p["cancellation_reason"]
    res = reservation(db, conf)
    bk = booking(res, journey_id)
    if bk.get("status") == "cancelled":
        raise ToolError("already_cancelled", f"Journey {journey_id} is already cancelled")
    fare = booking_fare(bk)
    refundable = reason in REFUNDABLE_REASONS or res.get("fare_type") == "refundable"
    fee = 0 if refundable else CANCELLATION_FEE
    refund = max(0, fare) if refundable else 0
    credit = 0 if refundable else max(0, fare - CANCELLATION_FEE)
    fare_class = bk.get("fare_class", "main_cabin")
    journey = db.get("journeys", {}).get(journey_id)

    bk["status"] = "cancelled"
    if journey is not None:
        for seg in journey.get("segments", []):
            available = seg.setdefault("available_seats", {})
            available[fare_class] = available.get(fare_class, 0) + 1
    all_cancelled = all(b.get("status") == "cancelled" for b in res.get("bookings", []))
    if all_cancelled:
        res["status"] = "cancelled"

    session.record({
        "action_type": "cancel_reservation", "confirmation_number": conf, "journey_id": journey_id,
        "cancellation_reason": reason, "is_refundable": refundable, "cancellation_fee": fee,
        "refund_amount_eligible": refund,
    })
    return {
        "status": "success", "confirmation_number": conf, "journey_id": journey_id,
        "is_refundable": refundable, "cancellation_fee": fee,
        "refund_amount_eligible": refund, "credit_amount_eligible": credit,
        "reservation_status": "cancelled" if all_cancelled else "active",
        "message": f"Journey {journey_id} cancelled successfully",
    }


def process_refund(session: ToolSession, p: dict[str, Any]) -> dict:
    """Record a refund under the next per-conversation refund number; no eligibility check."""
    db = session.db
    conf, amount, refund_type = p["confirmation_number"], p["refund_amount"], p["refund_type"]
    reservation(db, conf)
    if amount <= 0:  # unreachable: validation already requires > 0
        raise ToolError("invalid_amount", "Refund amount must be greater than 0")
    refund_id = f"REF-{conf}-{_padded(session.mint_number('process_refund'))}"
    db.setdefault("refunds", {})[refund_id] = {
        "refund_id": refund_id, "confirmation_number": conf, "refund_amount": amount, "refund_type": refund_type,
        "processing_days": 7, "initiated_date": db.get("_current_date"), "status": "processing",
    }
    session.record({
        "action_type": "process_refund", "confirmation_number": conf, "refund_amount": amount,
        "refund_type": refund_type,
    })
    return {
        "status": "success", "confirmation_number": conf, "refund_id": refund_id, "refund_amount": amount,
        "refund_type": refund_type, "processing_days": 7,
        "message": f"${amount} refund initiated, processing time 7 business days",
    }


def assign_seat(session: ToolSession, p: dict[str, Any]) -> dict:
    """Derive a deterministic seat from class, passenger id and preference; inventory untouched."""
    db = session.db
    conf, pax, journey_id, pref = p["confirmation_number"], p["passenger_id"], p["journey_id"], p["seat_preference"]
    res = reservation(db, conf)
    bk = booking(res, journey_id)
    seg = segments(bk, journey_id, p["flight_number"], all_when_omitted=False)[0]
    fn = p["flight_number"] if p["flight_number"] is not None else seg.get("flight_number")
    fare_class = bk.get("fare_class", "main_cabin")
    leg = _journey_leg(db, journey_id, fn)
    if leg is not None:
        if not leg.get("available_seats", {}).get(fare_class, 0) > 0:
            raise ToolError("no_seats_available", f"No seats available in {fare_class} on flight {fn}")
        types = leg.get("available_seat_types")
        allowed = types[fare_class] if isinstance(types, dict) and types and fare_class in types else ALL_SEAT_TYPES
        if pref != "no_preference" and pref not in allowed:
            raise ToolError(
                "seat_type_unavailable",
                f"No {pref} seats available in {fare_class} on this flight. Available types: {', '.join(allowed)}",
            )
    # int() of e.g. "X12" raises for PAX1/PAX12; the executor turns that into execution_error.
    seat = f"{SEAT_ROW_BASE.get(fare_class, 20) + int(pax[-3:])}{SEAT_LETTERS[pref]}"
    seg["seat"] = seat
    session.record({
        "action_type": "assign_seat", "confirmation_number": conf, "passenger_id": pax, "journey_id": journey_id,
        "flight_number": fn, "seat_preference": pref, "seat_assigned": seat,
    })
    return {
        "status": "success", "confirmation_number": conf, "passenger_id": pax, "journey_id": journey_id,
        "flight_number": fn, "seat_assigned": seat, "fare_class": fare_class, "preference": pref,
        "message": f"Seat {seat} ({pref}) successfully assigned",
    }


def _journey_leg(db: dict, journey_id: str, flight_number: Any) -> dict | None:
    journey = db.get("journeys", {}).get(journey_id)
    if journey is None:
        return None
    return next((leg for leg in journey.get("segments", []) if leg.get("flight_number") == flight_number), None)


def add_baggage_allowance(session: ToolSession, p: dict[str, Any]) -> dict:
    """Set the checked-bag count on one leg or all legs; fees are never touched."""
    db = session.db
    conf, journey_id, bags = p["confirmation_number"], p["journey_id"], p["num_bags"]
    bk = booking(reservation(db, conf), journey_id)
    if not 0 <= bags <= 5:  # unreachable: validation already enforces 0-5
        raise ToolError("invalid_bag_count", "Number of bags must be between 0 and 5")
    for seg in segments(bk, journey_id, p["flight_number"], all_when_omitted=True):
        seg["bags_checked"] = bags
    session.record({
        "action_type": "add_baggage_allowance", "confirmation_number": conf, "journey_id": journey_id,
        "flight_number": p["flight_number"], "num_bags": bags,
    })
    return {
        "status": "success", "confirmation_number": conf, "journey_id": journey_id, "bags_checked": bags,
        "message": f"Baggage allowance set to {bags} checked bag(s)",
    }


def add_meal_request(session: ToolSession, p: dict[str, Any]) -> dict:
    """Store the meal type string (``"none"`` included) on one leg or all legs."""
    db = session.db
    conf, pax, journey_id, meal = p["confirmation_number"], p["passenger_id"], p["journey_id"], p["meal_type"]
    bk = booking(reservation(db, conf), journey_id)
    for seg in segments(bk, journey_id, p["flight_number"], all_when_omitted=True):
        seg["meal_request"] = meal
    session.record({
        "action_type": "add_meal_request", "confirmation_number": conf, "passenger_id": pax,
        "journey_id": journey_id, "meal_type": meal, "flight_number": p["flight_number"],
    })
    return {
        "status": "success", "confirmation_number": conf, "passenger_id": pax, "journey_id": journey_id,
        "meal_type": meal, "message": f"{meal} meal request added",
    }


def add_to_standby(session: ToolSession, p: dict[str, Any]) -> dict:
    """Queue passengers on a journey; the reservation is optional and positions are positional."""
    db = session.db
    conf, journey_id, pax_ids = p["confirmation_number"], p["journey_id"], p["passenger_ids"]
    journey = db.get("journeys", {}).get(journey_id)
    if journey is None:
        raise ToolError("flight_not_found", f"Flight {journey_id} not found")
    if journey.get("status") == "cancelled":
        raise ToolError("flight_cancelled", "Cannot add to standby for cancelled flight")
    res = db.get("reservations", {}).get(conf)
    if res is not None and pax_ids:
        known = {pax.get("passenger_id") for pax in res.get("passengers", [])}
        unknown = [pid for pid in pax_ids if pid not in known]
        if unknown:
            raise ToolError("invalid_passengers", f"Unknown passenger ID(s): {', '.join(unknown)}")

    queue = journey.setdefault("standby_list", [])
    position = len(queue) + len(pax_ids)
    if res is not None:
        res.setdefault("standby_list", []).append(
            {"journey_id": journey_id, "passenger_ids": list(pax_ids), "position": position, "status": "pending"}
        )
    for pid in pax_ids:
        queue.append({"confirmation_number": conf, "passenger_id": pid, "position": len(queue) + 1})
    session.record({
        "action_type": "add_to_standby", "confirmation_number": conf, "journey_id": journey_id,
        "passenger_ids": list(pax_ids),
    })
    return {
        "status": "success", "confirmation_number": conf, "journey_id": journey_id,
        "standby_list_position": position, "message": f"Added {len(pax_ids)} passenger(s) to standby list",
    }


def issue_travel_credit(session: ToolSession, p: dict[str, Any]) -> dict:
    """One credit per reservation (code ``TC<CONF>PAX``); a repeat overwrites it."""
    db = session.db
    conf, pax, amount, reason = p["confirmation_number"], p["passenger_id"], p["amount"], p["credit_reason"]
    reservation(db, conf)
    code = f"TC{conf}{pax[:3].upper()}"
    today = str(db.get("_current_date") or "")
    expiry = f"{int(today[:4]) + 1}{today[4:]}"
    db.setdefault("travel_credits", {})[code] = {
        "credit_code": code, "confirmation_number": conf, "passenger_id": pax, "amount": amount,
        "credit_reason": reason, "issued_date": db.get("_current_date"), "expiry_date": expiry, "status": "active",
    }
    session.record({
        "action_type": "issue_travel_credit", "confirmation_number": conf, "passenger_id": pax, "amount": amount,
        "credit_reason": reason,
    })
    return {
        "status": "success", "confirmation_number": conf, "passenger_id": pax, "credit_code": code, "amount": amount,
        "valid_months": 12, "message": f"${amount} travel credit issued with code {code}",
    }


def issue_hotel_voucher(session: ToolSession, p: dict[str, Any]) -> dict:
    """One hotel voucher per reservation, at most 3 nights (checked after the lookup)."""
    db = session.db
    conf, pax, nights = p["confirmation_number"], p["passenger_id"], p["num_nights"]
    reservation(db, conf)
    if nights > MAX_HOTEL_NIGHTS:
        raise ToolError("exceeds_authority", f"Hotel vouchers can be issued for maximum of {MAX_HOTEL_NIGHTS} nights")
    code = f"HOTEL-{conf}"
    db.setdefault("hotel_vouchers", {})[code] = {
        "voucher_code": code, "confirmation_number": conf, "passenger_id": pax, "num_nights": nights,
        "issued_date": db.get("_current_date"), "status": "active",
    }
    session.record({
        "action_type": "issue_hotel_voucher", "confirmation_number": conf, "passenger_id": pax, "num_nights": nights,
    })
    return {
        "status": "success", "confirmation_number": conf, "passenger_id": pax, "voucher_code": code,
        "number_of_nights": nights, "valid_at": "Any hotels in airport area",
        "message": f"Hotel voucher issued with code {code} for {nights} nights",
    }


def issue_meal_voucher(session: ToolSession, p: dict[str, Any]) -> dict:
    """A fixed-amount voucher by reason; the code uses ``PAX0``-style prefixes, so ids collide."""
    db = session.db
    conf, pax, reason = p["confirmation_number"], p["passenger_id"], p["voucher_reason"]
    reservation(db, conf)
    amount = MEAL_VOUCHER_AMOUNTS[reason]
    code = f"MEAL-{conf}-{pax[:4].upper()}"
    db.setdefault("meal_vouchers", {})[code] = {
        "voucher_code": code, "confirmation_number": conf, "passenger_id": pax, "amount": amount,
        "voucher_reason": reason, "issued_date": db.get("_current_date"), "status": "active",
    }
    session.record({
        "action_type": "issue_meal_voucher", "confirmation_number": conf, "passenger_id": pax,
        "voucher_reason": reason, "amount": amount,
    })
    return {
        "status": "success", "confirmation_number": conf, "passenger_id": pax, "voucher_code": code,
        "amount": amount, "valid_at": "Airport terminal restaurants",
        "message": f"${amount} meal voucher issued with code {code}",
    }


def transfer_to_agent(session: ToolSession, p: dict[str, Any]) -> dict:
    """Mint a transfer id and end the conversation (port rule); the DB is not touched."""
    conf = p["confirmation_number"]
    reservation(session.db, conf)
    transfer_id = f"TRF-{conf}-{_padded(session.mint_number('transfer_to_agent'))}"
    session.record({
        "action_type": "transfer_to_agent", "confirmation_number": conf, "transfer_reason": p["transfer_reason"],
        "issue_summary": p["issue_summary"],
    })
    session.end_requested = True
    session.end_message = "Transfer complete."
    return copy.deepcopy({
        "status": "success", "transfer_id": transfer_id, "confirmation_number": conf,
        "transfer_reason": p["transfer_reason"], "issue_summary": p["issue_summary"],
        "estimated_wait": "2-3 minutes", "message": "Transferring to live agent",
    })
