"""Shared lookup procedures RES, BOOKING, SEGMENTS, SEATS and BOOKING_FARE (tools.md §1.4).

They return live DB objects (callers mutate them); results handed to the LLM are copied elsewhere.
"""
from __future__ import annotations

from typing import Any

from .errors import ToolError


def reservation(db: dict, conf: str) -> dict:
    """RES: the reservation stored under the upper-cased confirmation number."""
    found = db.get("reservations", {}).get(conf)
    if found is None:
        raise ToolError("not_found", f"Reservation {conf} not found")
    return found


def booking(res: dict, journey_id: str) -> dict:
    """BOOKING: the first live booking with that journey id, else the first cancelled one.

    After a partial rebook two bookings share a journey id; this prefers the kept, live one.
    """
    matches = [bk for bk in res.get("bookings", []) if bk.get("journey_id") == journey_id]
    if not matches:
        raise ToolError("journey_not_found", f"Journey {journey_id} not found in reservation")
    for bk in matches:
        if bk.get("status") != "cancelled":
            return bk
    return matches[0]


def segments(bk: dict, journey_id: str, flight_number: str | None, *, all_when_omitted: bool) -> list[dict]:
    """SEGMENTS: booking segments addressed by an exact, case-sensitive flight number.

    Without a flight number, mode *all* returns every segment and mode *one* needs exactly one.
    """
    segs = bk.get("segments", [])
    if flight_number is not None:
        chosen = [seg for seg in segs if seg.get("flight_number") == flight_number]
        if not chosen:
            raise ToolError("flight_not_found", f"Flight {flight_number} not found in journey {journey_id}")
        return chosen
    if all_when_omitted:
        return list(segs)
    if len(segs) != 1:
        raise ToolError(
            "flight_number_required", f"Journey {journey_id} has {len(segs)} segments; flight_number is required"
        )
    return [segs[0]]


def seats(journey: dict) -> dict[str, Any]:
    """SEATS: per-class availability of a journey, the minimum over its segments."""
    segs = journey.get("segments", [])
    if not segs:
        return {}
    result = dict(segs[0].get("available_seats", {}))
    for seg in segs[1:]:
        available = seg.get("available_seats", {})
        for fare_class in result:
            result[fare_class] = min(result[fare_class], available.get(fare_class, 0))
    return result


def booking_fare(bk: dict) -> Any:
    """BOOKING_FARE: the booking's own fare when present, else the sum of its segments' fares."""
    if "fare_paid" in bk:
        return bk["fare_paid"]
    return sum(seg.get("fare_paid", 0) for seg in bk.get("segments", []))
