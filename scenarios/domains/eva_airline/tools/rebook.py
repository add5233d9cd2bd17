"""``rebook_flight`` (tools.md §3.5), the tool that decides most golds.

Every check and every computed value comes before the first mutation. The upstream quirks of §10
(cancel the *first* matching booking, seat leaks, IRROPS keeps the old price, missed connections
are not fee-free) are reproduced on purpose; bags and meals carry over (port rule).
"""
from __future__ import annotations

import copy
from typing import Any

from .errors import ToolError
from .lookups import booking, booking_fare, reservation, seats, segments
from .session import ToolSession

_VOLUNTARY_FEES = {"basic_economy": 75, "main_cabin": 75, "premium_economy": 75, "business": 0, "first": 0}


def change_fee(rebooking_type: str, original_class: str, irrops: bool, waived: bool) -> int:
    """The change fee, always by the *original* class."""
    if irrops or waived:
        return 0
    if rebooking_type == "same_day":
        return 199 if original_class == "basic_economy" else 75
    return _VOLUNTARY_FEES.get(original_class, 75)


def rebook_flight(session: ToolSession, p: dict[str, Any]) -> dict:
    """Cancel the old booking, append the replacement (and a kept booking on a partial rebook),
    and move one seat of inventory in each direction."""
    db = session.db
    conf, journey_id, new_journey_id = p["confirmation_number"], p["journey_id"], p["new_journey_id"]
    flight_number = p["flight_number"]
    partial = flight_number is not None
    res = reservation(db, conf)
    bk = booking(res, journey_id)
    new_journey = db.get("journeys", {}).get(new_journey_id)
    if new_journey is None:
        raise ToolError("flight_not_found", f"Flight {new_journey_id} not found")
    if not new_journey.get("bookable", True):
        raise ToolError("not_bookable", f"Flight {new_journey_id} is not available for booking")
    original_class = bk.get("fare_class", "main_cabin")
    target_class = p["new_fare_class"] or original_class
    irrops = "irrops" in p["rebooking_type"]
    fee = change_fee(p["rebooking_type"], original_class, irrops, p["waive_change_fee"])
    replaced = segments(bk, journey_id, flight_number, all_when_omitted=False)[0] if partial else None
    old_fare = replaced.get("fare_paid", 0) if replaced is not None else booking_fare(bk)
    new_fare = new_journey.get("fares", {}).get(target_class)
    if new_fare is None:
        raise ToolError("fare_class_not_available", f"Fare class '{target_class}' is not available on flight {new_journey_id}")
    if not seats(new_journey).get(target_class, 0) > 0:
        raise ToolError("no_seats_available", f"No seats available in {target_class} on flight {new_journey_id}")

    difference = new_fare - old_fare
    collected = 0 if irrops else fee + max(0, difference)
    new_booking = {
        "journey_id": new_journey_id,
        "fare_class": target_class,
        "fare_paid": old_fare if irrops else new_fare,
        "status": "confirmed",
        "segments": _new_segments(bk, replaced, new_journey, target_class, irrops),
    }
    kept = [seg for seg in bk.get("segments", []) if seg.get("flight_number") != flight_number] if partial else []
    kept_booking = None
    if kept:
        kept_booking = {
            "journey_id": journey_id,
            "fare_class": original_class,
            "fare_paid": sum(seg.get("fare_paid", 0) for seg in kept),
            "status": "confirmed",
            "segments": copy.deepcopy(kept),
        }
    old_journey = db.get("journeys", {}).get(journey_id)

    # Mutations (§3.5 order).
    bookings = res["bookings"]
    next(b for b in bookings if b.get("journey_id") == journey_id)["status"] = "cancelled"
    bookings.append(new_booking)
    if kept_booking is not None:
        bookings.append(kept_booking)
    res["status"] = "changed"
    for seg in new_journey.get("segments", []):
        available = seg.setdefault("available_seats", {})
        available[target_class] = available.get(target_class, 0) - 1
    if old_journey is not None:
        for seg in old_journey.get("segments", []):
            available = seg.setdefault("available_seats", {})
            available[original_class] = available.get(original_class, 0) + 1

    cost = {
        "original_fare_class": original_class,
        "new_fare_class": target_class,
        "cabin_changed": original_class != target_class,
        "change_fee": fee,
        "fare_difference": difference,
        "credit_due": max(0, -difference),
        "total_collected": collected,
        "fee_waived": irrops or p["waive_change_fee"],
    }
    action = {
        "action_type": "rebook_flight",
        "confirmation_number": conf,
        "old_journey_id": journey_id,
        "new_journey_id": new_journey_id,
        "rebooking_type": p["rebooking_type"],
        "original_fare_class": original_class,
        "new_fare_class": target_class,
        "change_fee": fee,
        "fare_difference": difference,
        "total_collected": collected,
        "partial_rebook": partial,
    }
    if partial:
        action["replaced_flight_number"] = flight_number
    session.record(action)
    message = f"Successfully rebooked to flight {new_journey_id}"
    if cost["cabin_changed"]:
        message += f" in {target_class}"
    result = {
        "status": "success",
        "confirmation_number": conf,
        "new_journey": _journey_summary(new_journey),
        "cost_summary": cost,
        "message": message,
    }
    if partial:
        result["partial_rebook"] = True
        result["replaced_segment"] = {
            "flight_number": replaced.get("flight_number"),
            "origin": replaced.get("origin"),
            "destination": replaced.get("destination"),
            "fare_paid": replaced.get("fare_paid"),
        }
        result["kept_segments"] = [
            {
                "flight_number": seg.get("flight_number"),
                "origin": seg.get("origin"),
                "destination": seg.get("destination"),
                "fare_paid": seg.get("fare_paid"),
                "seat": seg.get("seat"),
            }
            for seg in kept
        ]
    return copy.deepcopy(result)


def _new_segments(bk: dict, replaced: dict | None, new_journey: dict, target_class: str, irrops: bool) -> list[dict]:
    """One six-key booking segment per leg of the new journey; the seat never carries over."""
    old_segs = bk.get("segments", [])
    new_legs = new_journey.get("segments", [])
    built = []
    for i, leg in enumerate(new_legs):
        if irrops and replaced is None and i < len(old_segs):
            fare = old_segs[i].get("fare_paid", 0)
        elif irrops and replaced is not None and len(new_legs) == 1:
            fare = replaced.get("fare_paid", 0)
        else:
            fare = leg.get("fares", {}).get(target_class, 0)
        if replaced is not None:
            source = replaced
        elif i < len(old_segs):
            source = old_segs[i]
        else:
            source = old_segs[0] if old_segs else {}
        built.append({
            "flight_number": leg.get("flight_number"),
            "date": new_journey.get("date"),
            "fare_paid": fare,
            "seat": None,
            "bags_checked": source.get("bags_checked") or 0,
            "meal_request": source.get("meal_request"),
        })
    return built


def _journey_summary(journey: dict) -> dict:
    segs = journey.get("segments", [])
    return {
        "journey_id": journey.get("journey_id"),
        "num_stops": journey.get("num_stops", 0),
        "segments": copy.deepcopy(segs),
        "departure": segs[0].get("scheduled_departure") if segs else None,
        "arrival": segs[-1].get("scheduled_arrival") if segs else None,
        "origin": journey.get("origin"),
        "destination": journey.get("destination"),
    }
