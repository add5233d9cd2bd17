"""Who may listen in on a run's live calls (EVASITE_LISTEN_ACCESS names this for voice/): the
same rule as controlling the run, its owner or staff."""
from __future__ import annotations

from typing import Any

from scoring.models import Run
from scoring.web.access import may_control


def may_listen(user: Any, run_id: int) -> bool | None:
    """True or False for an existing run, None when there is no such run."""
    row = Run.objects.filter(pk=run_id).values("owner_id").first()
    if row is None:
        return None
    return may_control(user, row["owner_id"])
