"""Step "V" of every tool: parameter specs, formats, error mapping and which failure is reported
(tools.md §1.3).

All parameters are checked before anything else; the first failure of a *mapped* parameter wins,
otherwise the first failure is reported as ``invalid_parameter``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from . import coercion
from .errors import ToolError

FARE_CLASSES = ("basic_economy", "main_cabin", "premium_economy", "business", "first")
REBOOKING_TYPES = (
    "voluntary", "same_day", "irrops_cancellation", "irrops_delay", "irrops_schedule_change",
    "missed_flight_passenger_fault", "missed_connection_airline_fault",
)
CANCELLATION_REASONS = ("voluntary", "irrops_refund", "24_hour_rule", "schedule_unacceptable", "medical", "bereavement")
REFUND_TYPES = ("full_fare", "partial_fare", "taxes_only", "ancillary_fees")
SEAT_PREFERENCES = ("window", "aisle", "middle", "no_preference")
MEAL_TYPES = (
    "vegetarian", "vegan", "kosher", "halal", "gluten_free", "diabetic", "low_sodium", "child", "hindu", "none",
    "standard",
)
CREDIT_REASONS = (
    "cancellation_non_refundable", "fare_difference_negative", "service_recovery", "goodwill", "downgrade_compensation",
)
VOUCHER_REASONS = ("delay_over_2_hours", "delay_over_4_hours", "cancellation_wait_same_day", "irrops_overnight")


@dataclass(frozen=True)
class Format:
    """A whole-string pattern, its LLM hint and whether the value is upper-cased afterwards."""

    pattern: re.Pattern[str]
    hint: str
    upper: bool = False


FORMATS: dict[str, Format] = {
    "confirmation": Format(re.compile(r"[A-Za-z0-9]{6}"), "must be 6 alphanumeric characters", upper=True),
    "flight": Format(re.compile(r"[A-Za-z]{2,3}[0-9]{1,4}"), "must be 2-3 letters followed by 1-4 digits (e.g. SK621)"),
    "date": Format(re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}"), "must be YYYY-MM-DD"),
    "journey": Format(
        re.compile(r"FL_(?:[A-Za-z]{2,3}[0-9]{1,4}_)+[0-9]{8}"), "must be FL_<flight>_<YYYYMMDD> (e.g. FL_SK621_20260320)"
    ),
    "passenger": Format(re.compile(r"PAX[0-9]+"), "must be PAX<digits> (e.g. PAX001)"),
    "airport": Format(re.compile(r"[A-Za-z]{3}"), "must be 3-letter airport code (e.g. JFK)", upper=True),
}

MAPPED_ERRORS: dict[str, str] = {
    "confirmation_number": "invalid_confirmation_number_format",
    "flight_number": "invalid_flight_number_format",
    "flight_date": "invalid_date_format",
    "date": "invalid_date_format",
    "journey_id": "invalid_journey_id_format",
    "new_journey_id": "invalid_journey_id_format",
    "passenger_id": "invalid_passenger_id_format",
    "passenger_ids": "invalid_passenger_id_format",
    "origin": "invalid_airport_code_format",
    "destination": "invalid_airport_code_format",
    "num_bags": "invalid_bag_count",
    "rebooking_type": "invalid_rebooking_type",
    "fare_class": "invalid_fare_class",
    "new_fare_class": "invalid_fare_class",
    "meal_type": "invalid_meal_type",
    "credit_reason": "invalid_credit_reason",
    "voucher_reason": "invalid_voucher_reason",
    "refund_type": "invalid_refund_type",
    "seat_preference": "invalid_seat_preference",
    "cancellation_reason": "invalid_cancellation_reason",
}

_MISSING = object()


@dataclass(frozen=True)
class Param:
    """One declared parameter: its lax type, format and numeric bounds."""

    name: str
    kind: str  # "string" | "integer" | "number" | "boolean" | "enum" | "string_list"
    required: bool = True
    fmt: str | None = None
    choices: tuple[str, ...] = ()
    ge: float | None = None
    gt: float | None = None
    le: float | None = None

    def check(self, value: Any) -> tuple[bool, Any]:
        """Coerce, then apply format and bounds; ``(True, value)`` or ``(False, validator text)``."""
        ok, out = _COERCERS[self.kind](value, self.choices)
        if not ok:
            return ok, out
        if self.fmt is not None:
            fmt = FORMATS[self.fmt]
            items = out if self.kind == "string_list" else [out]
            if not all(fmt.pattern.fullmatch(item) for item in items):
                return False, fmt.hint
            if fmt.upper:
                out = out.upper()
        if self.ge is not None and out < self.ge:
            return False, f"Input should be greater than or equal to {_num(self.ge)}"
        if self.gt is not None and not out > self.gt:
            return False, f"Input should be greater than {_num(self.gt)}"
        if self.le is not None and out > self.le:
            return False, f"Input should be less than or equal to {_num(self.le)}"
        return True, out


_COERCERS: dict[str, Callable[[Any, tuple[str, ...]], tuple[bool, Any]]] = {
    "string": lambda v, _c: coercion.as_string(v),
    "integer": lambda v, _c: coercion.as_integer(v),
    "number": lambda v, _c: coercion.as_number(v),
    "boolean": lambda v, _c: coercion.as_boolean(v),
    "enum": coercion.as_choice,
    "string_list": lambda v, _c: coercion.as_string_list(v),
}


def _num(bound: float) -> str:
    return str(int(bound)) if bound == int(bound) else str(bound)


def _conf() -> Param:
    return Param("confirmation_number", "string", fmt="confirmation")


def _journey(name: str = "journey_id") -> Param:
    return Param(name, "string", fmt="journey")


def _pax() -> Param:
    return Param("passenger_id", "string", fmt="passenger")


def _optional_flight() -> Param:
    return Param("flight_number", "string", required=False, fmt="flight")


# Declaration order matters: it decides which failure is reported.
TOOL_PARAMS: dict[str, tuple[Param, ...]] = {
    "get_reservation": (_conf(), Param("last_name", "string")),
    "get_flight_status": (Param("flight_number", "string", fmt="flight"), Param("flight_date", "string", fmt="date")),
    "get_disruption_info": (Param("flight_number", "string", fmt="flight"), Param("date", "string", fmt="date")),
    "search_rebooking_options": (
        Param("origin", "string", fmt="airport"),
        Param("destination", "string", fmt="airport"),
        Param("date", "string", fmt="date"),
        Param("passenger_count", "integer", ge=1),
        Param("fare_class", "enum", choices=FARE_CLASSES + ("any",)),
    ),
    "rebook_flight": (
        _conf(),
        _journey(),
        _journey("new_journey_id"),
        Param("rebooking_type", "enum", choices=REBOOKING_TYPES),
        Param("waive_change_fee", "boolean"),
        Param("new_fare_class", "enum", required=False, choices=FARE_CLASSES),
        _optional_flight(),
    ),
    "cancel_reservation": (
        _conf(), _journey(), Param("cancellation_reason", "enum", choices=CANCELLATION_REASONS),
    ),
    "process_refund": (
        _conf(), Param("refund_amount", "number", gt=0), Param("refund_type", "enum", choices=REFUND_TYPES),
    ),
    "assign_seat": (
        _conf(), _pax(), _journey(), Param("seat_preference", "enum", choices=SEAT_PREFERENCES), _optional_flight(),
    ),
    "add_baggage_allowance": (_conf(), _journey(), Param("num_bags", "integer", ge=0, le=5), _optional_flight()),
    "add_meal_request": (
        _conf(), _pax(), _journey(), Param("meal_type", "enum", choices=MEAL_TYPES), _optional_flight(),
    ),
    # tools.md §3.11: a malformed (or empty) journey id is a format error, as in the reference.
    "add_to_standby": (
        _conf(), _journey(), Param("passenger_ids", "string_list", fmt="passenger"),
    ),
    "issue_travel_credit": (
        _conf(), _pax(), Param("amount", "number", gt=0), Param("credit_reason", "enum", choices=CREDIT_REASONS),
    ),
    "issue_hotel_voucher": (_conf(), _pax(), Param("num_nights", "integer", ge=1)),
    "issue_meal_voucher": (_conf(), _pax(), Param("voucher_reason", "enum", choices=VOUCHER_REASONS)),
    "transfer_to_agent": (_conf(), Param("transfer_reason", "string"), Param("issue_summary", "string")),
}


def validate(tool: str, args: dict) -> dict[str, Any]:
    """Return the coerced parameters (omitted optionals as None) or raise the reported ToolError."""
    params: dict[str, Any] = {}
    failures: list[tuple[Param, Any, str]] = []
    for spec in TOOL_PARAMS[tool]:
        value = args.get(spec.name, _MISSING)
        if value is _MISSING or (value is None and not spec.required):
            if spec.required:
                failures.append((spec, _MISSING, "Field required"))
            params[spec.name] = None
            continue
        ok, out = spec.check(value)
        if ok:
            params[spec.name] = out
        else:
            failures.append((spec, value, out))
    if failures:
        raise _reported(failures, args)
    return params


def _reported(failures: list[tuple[Param, Any, str]], args: dict) -> ToolError:
    mapped = [failure for failure in failures if failure[0].name in MAPPED_ERRORS]
    if mapped:
        spec, value, text = mapped[0]
        shown = args if value is _MISSING else value
        hint = FORMATS[spec.fmt].hint if spec.fmt is not None else text
        return ToolError(MAPPED_ERRORS[spec.name], f"Invalid {spec.name} '{shown}': {hint}")
    spec, _value, text = failures[0]
    return ToolError("invalid_parameter", f"Invalid or missing parameter '{spec.name}': {text}")
