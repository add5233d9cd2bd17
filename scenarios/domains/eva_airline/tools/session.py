"""Per-conversation tool state kept outside the DB: ID counters, action log, end flag (§1.6, §1.7)."""
from __future__ import annotations


class ToolSession:
    """One conversation's view of a scenario DB; write tools mutate ``db`` in place."""

    def __init__(self, db: dict) -> None:
        self.db = db
        self.counters: dict[str, int] = {}
        self.actions: list[dict] = []
        self.end_requested = False
        self.end_message: str | None = None

    def mint_number(self, tool: str) -> int:
        """Next ID number for ``tool``; called only once every check has passed, so failures never
        consume a number (the port's rule)."""
        self.counters[tool] = self.counters.get(tool, 0) + 1
        return self.counters[tool]

    def record(self, action: dict) -> None:
        """Append one action record (successful write/system tools only)."""
        self.actions.append(action)
