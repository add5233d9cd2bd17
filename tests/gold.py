"""What only the gold knows about a scenario, for tests that check a page, a brief or a prompt
never gives the answer away: not just the expected database's hash, but the values a solver
would have to find (the flight it must move to, the seat, the journeys it must touch)."""
from __future__ import annotations

import re
from typing import Any

from scoring.core.canonical import db_hash

_JOURNEY = re.compile(r"^FL_([A-Z]{2}\d{2,4})_\d{8}$")


def _strings(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set().union(*(_strings(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_strings(v) for v in value)) if value else set()
    return {value} if isinstance(value, str) else set()


def gold_secrets(scenario: Any) -> set[str]:
    """The expected DB's hash and every code-like string (it holds a digit) of the gold write calls'
    arguments and of the expected DB's new values, less what the passenger's own prompt says;
    journey ids add their flight number ("FL_SK703_20260325" -> "SK703")."""
    from scenarios.domains.eva_airline.gold import gold_calls
    from scenarios.domains.eva_airline.tools import WRITE_TOOL_NAMES
    from voice.bots.models.gold_replay import identify_scenario

    expected = scenario.expected_scenario_db
    eva_id = identify_scenario(scenario.fresh_db())
    assert eva_id is not None, f"{scenario.name}: no gold calls for this scenario"
    written = set().union(*(_strings(call.get("params") or {}) for call in gold_calls(eva_id)
                            if call["tool"] in WRITE_TOOL_NAMES), set())
    candidates = written | (_strings(expected) - _strings(scenario.fresh_db()))
    candidates |= {match.group(1) for value in candidates if (match := _JOURNEY.match(value))}
    prompt = scenario.get_user_prompt().upper()
    secrets = {value for value in candidates if re.search(r"\d", value) and value.upper() not in prompt}
    return secrets | {db_hash(expected)}


def leaked_gold(scenario: Any, text: str) -> list[str]:
    """The gold secrets that appear in ``text`` (whole tokens, any case)."""
    return sorted(secret for secret in gold_secrets(scenario)
                  if re.search(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", text, re.I))
