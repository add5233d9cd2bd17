"""Moving through a run's results while reviewing: previous and next in queue order, and the
"needs review" queue (unreviewed results, failures first, then N/A, then passes), so a reviewer
spends their time where the automatic verdict is most likely wrong."""
from __future__ import annotations

from dataclasses import dataclass

from scoring.models import ScenarioResult


@dataclass(frozen=True)
class Neighbours:
    previous_id: int | None
    next_id: int | None
    next_unreviewed_id: int | None
    position: int  # 1-based place of this result in the run
    total: int
    unreviewed: int


def _verdict_rank(success: bool | None) -> int:
    return {False: 0, None: 1, True: 2}[success]


def review_queue(run_id: int) -> list[int]:
    """Ids of the run's unreviewed results, failures first, each group in queue order."""
    rows = ScenarioResult.objects.filter(run_id=run_id, reviewed=False).values_list(
        "pk", "is_successful", "position", "trial")
    return [pk for pk, success, position, trial in
            sorted(rows, key=lambda row: (_verdict_rank(row[1]), row[2], row[3], row[0]))]


def result_neighbours(result: ScenarioResult) -> Neighbours:
    """Where ``result`` sits in its run, and where a reviewer goes next."""
    order = list(ScenarioResult.objects.filter(run_id=result.run_id)
                 .order_by("position", "trial", "pk").values_list("pk", flat=True))
    index = order.index(result.pk)
    full = review_queue(result.run_id)  # once: every result page asks
    queue = [pk for pk in full if pk != result.pk]
    # The queue continues after this result when it is in it, so "next" never loops back early.
    after = queue
    if not result.reviewed:
        place = full.index(result.pk)
        after = full[place + 1:] + full[:place]
    return Neighbours(
        previous_id=order[index - 1] if index > 0 else None,
        next_id=order[index + 1] if index + 1 < len(order) else None,
        next_unreviewed_id=after[0] if after else None,
        position=index + 1,
        total=len(order),
        unreviewed=len(queue) + (0 if result.reviewed else 1),
    )
