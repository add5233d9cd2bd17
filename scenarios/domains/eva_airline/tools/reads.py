"""The four read tools (tools.md §3.1–§3.4). Only get_reservation writes, and only ``session``."""
from __future__ import annotations

import copy
from typing import Any

from .errors import ToolError
from .lookups import reservation, seats
from .session import ToolSession
from .validation import FARE_CLASSES

SEARCHABLE_STATUSES = frozenset({"scheduled", "on_time", "delayed"})


def get_reservation(session: ToolSession, p: dict[str, Any]) -> dict:
    """Authenticate by last name (an empty name skips the check, §10.8) and return a sorted copy."""
    db = session.db
    conf, last_name = p["confirmation_number"], p["last_name"]
    res = reservation(db, conf)
    if last_name:
        wanted = last_name.lower()
        if not any(str(pax.get("last_name", "")).lower() == wanted for pax in res.get("passengers", [])):
            raise ToolError("authentication_failed", f"Last name does not match reservation {conf}")
    snapshot = copy.deepcopy(res)
    if isinstance(snapshot.get("bookings"), list):
        snapshot["bookings"].sort(key=_booking_sort_key)
    # Project decision (§5): upstream's session marker; hash-neutral.
    marker = db.get("session")
    if not isinstance(marker, dict):
        marker = db["session"] = {}
    marker.update({"confirmation_number": conf, "last_name": last_name.lower()})
    return {"status": "success", "reservation": snapshot}


def _booking_sort_key(bk: dict) -> tuple[str, str]:
    segs = bk.get("segments") or [{}]
    return (str(segs[0].get("date") or ""), str(bk.get("journey_id") or ""))


def get_flight_status(session: ToolSession, p: dict[str, Any]) -> dict:
    """The standalone journey, else the first journey that day holding the flight as any leg."""
    journeys = session.db.get("journeys", {})
    fn = p["flight_number"].upper()
    d8 = p["flight_date"].replace("-", "")
    found = journeys.get(f"FL_{fn}_{d8}")
    if found is None:
        for journey in journeys.values():
            if str(journey.get("date", "")).replace("-", "") != d8:
                continue
            if any(str(seg.get("flight_number", "")).upper() == fn for seg in journey.get("segments", [])):
                found = journey
                break
    if found is None:
        raise ToolError("not_found", f"Flight {p['flight_number']} not found for date {p['flight_date']}")
    return {"status": "success", "journey": copy.deepcopy(found)}


def get_disruption_info(session: ToolSession, p: dict[str, Any]) -> dict:
    """The disruption record keyed ``<FN>_<date>``; there is no any-date search."""
    fn = p["flight_number"].upper()
    found = session.db.get("disruptions", {}).get(f"{fn}_{p['date']}")
    if found is None:
        raise ToolError("not_found", f"No disruption info found for flight {fn}")
    return {"status": "success", "disruption": copy.deepcopy(found)}


def search_rebooking_options(session: ToolSession, p: dict[str, Any]) -> dict:
    """Bookable, flying journeys on the route and date with enough seats, sorted by departure."""
    count, fare_class = p["passenger_count"], p["fare_class"]
    options = []
    for journey in session.db.get("journeys", {}).values():
        if journey.get("origin") != p["origin"] or journey.get("destination") != p["destination"]:
            continue
        if journey.get("date") != p["date"] or journey.get("status") not in SEARCHABLE_STATUSES:
            continue
        if not journey.get("bookable", False):
            continue
        available = seats(journey)
        if fare_class == "any":
            if not any(v is not None and v >= count for v in available.values()):
                continue
        elif not available.get(fare_class, 0) >= count:
            continue
        options.append(_option(journey, available, _option_fare(journey, available, fare_class, count)))
    options.sort(key=lambda option: option["departure_time"])
    return {"status": "success", "options": options, "count": len(options), "message": f"{len(options)} flight(s) found"}


def _option_fare(journey: dict, available: dict, fare_class: str, count: int) -> Any:
    fares = journey.get("fares", {})
    if fare_class != "any":
        return fares.get(fare_class)
    best = None
    for cls in FARE_CLASSES:
        fare = fares.get(cls)
        if available.get(cls, 0) >= count and fare is not None and (best is None or fare < best):
            best = fare
    return best


def _option(journey: dict, available: dict, fare: Any) -> dict:
    segs = journey.get("segments", [])
    return {
        "journey_id": journey.get("journey_id"),
        "origin": journey.get("origin"),
        "destination": journey.get("destination"),
        "num_stops": journey.get("num_stops", 0),
        "total_duration_minutes": journey.get("total_duration_minutes"),
        "segments": copy.deepcopy(segs),
        "departure_time": segs[0].get("scheduled_departure"),
        "arrival_time": segs[-1].get("scheduled_arrival"),
        "available_seats": {cls: available.get(cls, 0) for cls in FARE_CLASSES},
        "fare": fare,
    }
