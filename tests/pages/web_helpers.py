"""Helpers of the page tests: a valid run form, and requests made the way daphne makes them."""
from __future__ import annotations

from typing import Any

from asgiref.sync import ThreadSensitiveContext
from django.test import AsyncClient


def form_data(**overrides: str | list[str]) -> dict[str, str | list[str]]:
    """A valid run form (one text scenario), with ``overrides``."""
    values: dict[str, str | list[str]] = {field: str(value) for field, value in {
        "scope": "pick", "modality": "text", "agent_model": "gold-replay",
        "agent_api_key_name": "AGENT_API_KEY", "user_model": "scripted", "user_api_key_name": "USER_API_KEY",
        "concurrency": 1, "trials": 1, "inactivity_timeout": 120.0, "conversation_end_policy": "tool-only",
        "min_agent_turns": 3, "judge_api_key_name": "JUDGE_API_KEY"}.items()}
    values["scenarios"] = ["eva_airline__1_1_3"]
    values.update(overrides)
    return values


async def post(client: AsyncClient, url: str, data: Any = None) -> Any:
    """POST inside a ThreadSensitiveContext, as Django's ASGI handler (daphne) runs each request:
    the test client alone would run the request's sync middleware on the thread a started run
    needs for its own database calls."""
    async with ThreadSensitiveContext():
        return await client.post(url, data or {})
