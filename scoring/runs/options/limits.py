"""Upper bounds on the numbers a run may ask for. Without them one form field (``trials=1e23``)
could make the server build an unbounded queue; with them every run's size is known up front.
The operator adjusts them (``EVASITE_MAX_*``); the command line obeys them too."""
from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Limits:
    trials: int = 100
    concurrency: int = 64
    duration: int = 3600  # seconds, --duration
    timeout: float = 3600.0  # seconds: inactivity, judge timeout, pause, retry back-off
    retries: int = 10  # --max-auto-retries
    attempts: int = 10_000  # scenarios × trials in one run

    @classmethod
    def from_settings(cls) -> "Limits":
        """The operator's bounds (``settings.EVASITE_LIMITS``; missing keys keep the defaults)."""
        from django.conf import settings

        configured = getattr(settings, "EVASITE_LIMITS", {}) or {}
        known = {item.name for item in fields(cls)}
        return cls(**{name: value for name, value in configured.items() if name in known})
