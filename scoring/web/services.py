"""Writes the site makes besides running evaluations: a run's name, tags and note, a reviewer's
verdict on a result, and re-scoring results from their stored metrics. Views and the admin call
these; each is one short transaction, so the rules (a verdict is a review, the reviewer and time
are stamped, the row and ``metrics.json`` agree after a re-score) live in one place."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from scenarios.registry import get_eval_scenario
from scoring.core.files import write_json
from scoring.models import Run, RunTag, ScenarioResult
from scoring.services import scenario_result_record
from scoring.web.review import rescored_metrics


@transaction.atomic
def run_annotate(*, run_id: int, name: str, tags: list[str], note: str) -> Run:
    """Set the run's name, tags (replacing the old ones) and note; values come validated."""
    run = Run.objects.select_for_update().get(pk=run_id)
    run.name, run.note = name, note
    run.save(update_fields=["name", "note"])
    run.tags.set([RunTag.objects.get_or_create(name=tag)[0] for tag in tags])
    RunTag.objects.filter(runs__isnull=True).delete()  # a tag nobody uses any more goes
    return run


@transaction.atomic
def scenario_result_review(*, result_id: int, reviewer_id: int | None, reviewed: bool, verdict: str,
                           note: str) -> ScenarioResult:
    """Record a review. A verdict counts as a review; the reviewer and time are stamped whenever
    any review field changes, and kept as they were when nothing did."""
    result = ScenarioResult.objects.select_for_update().get(pk=result_id)
    reviewed = reviewed or bool(verdict)
    changed = (result.reviewed, result.review_verdict, result.review_note) != (reviewed, verdict, note)
    result.reviewed, result.review_verdict, result.review_note = reviewed, verdict, note
    if changed:
        result.reviewed_by_id, result.reviewed_at = reviewer_id, timezone.now()
    result.save(update_fields=["reviewed", "review_verdict", "review_note", "reviewed_by", "reviewed_at"])
    return result


@dataclass(frozen=True)
class RescoreReport:
    changed: int
    unchanged: int
    skipped: int

    def __str__(self) -> str:
        return (f"Re-scored: {self.changed} changed, {self.unchanged} unchanged, "
                f"{self.skipped} skipped (scenario no longer registered).")


def scenario_results_rescore(*, result_ids: list[int]) -> RescoreReport:
    """Re-apply the signal rules to stored metrics (no re-run); the row goes through the runner's
    own record function and ``metrics.json`` is rewritten, so files and rows keep agreeing."""
    changed = unchanged = skipped = 0
    for result in ScenarioResult.objects.filter(pk__in=result_ids).order_by("pk"):
        scenario = get_eval_scenario(result.scenario_name)
        if scenario is None:
            skipped += 1
            continue
        metrics = rescored_metrics(result.metrics or {}, scenario.success_signals or ())
        if metrics == result.metrics:
            unchanged += 1
            continue
        scenario_result_record(run_id=result.run_id, metrics=metrics, position=result.position,
                               trial=result.trial, final_db=result.final_db)
        metrics_file = Path(result.directory) / "metrics.json" if result.directory else None
        if metrics_file is not None and metrics_file.is_file():
            write_json(metrics_file, metrics)
        changed += 1
    return RescoreReport(changed, unchanged, skipped)


@transaction.atomic
def run_mark_cancelled(*, run_id: int, by: str) -> None:
    """Say who cancelled a run from the site (the runner only knows it was interrupted)."""
    Run.objects.filter(pk=run_id, status=Run.Status.INTERRUPTED).update(
        error=f"cancelled from the site by {by}"[:500])
