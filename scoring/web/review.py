"""Admin review helpers: the CSV export of results and re-scoring from stored metrics (the
signal rules of ``scoring.core.signals``, no re-run)."""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from typing import Any

from scoring.core.csv_cells import safe_cell
from scoring.core.signals import composite_fields, signal_verdicts

CSV_COLUMNS = ("run", "scenario_name", "trial", "is_successful", "is_task_successful", "db_state_match",
               "clean_exit", "stop_reason", "total_turns", "scenario_duration", "auto_retry_count",
               "reviewed", "review_verdict", "review_note", "reviewed_by")


def results_csv(rows: Iterable[Mapping[str, Any]]) -> str:
    """``CSV_COLUMNS`` for each row (a mapping of those names), header first."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({name: _cell(row.get(name)) for name in CSV_COLUMNS})
    return out.getvalue()


def _cell(value: Any) -> Any:
    """Text as a spreadsheet shows it, never as a formula (review notes are typed by people)."""
    if value is None:
        return ""
    return safe_cell(value) if isinstance(value, str) else value


def rescored_metrics(metrics: Mapping[str, Any], success_signals: Iterable[str]) -> dict[str, Any]:
    """``metrics`` with ``success_breakdown``/``is_successful``/``is_task_successful`` recomputed
    from the stored signal verdicts and the scenario's current whitelist (stall rule kept)."""
    updated = dict(metrics)
    fields = composite_fields(signal_verdicts(metrics), success_signals,
                              insufficient_agent_turns=bool(metrics.get("insufficient_agent_turns")))
    if "is_task_successful" not in fields:
        updated.pop("is_task_successful", None)
    updated.update(fields)
    return updated
