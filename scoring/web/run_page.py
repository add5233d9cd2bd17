"""Everything the run page shows, gathered once for the full page and for the panels its script
fetches while the run goes on (so the live page and a reload render the very same markup)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from django.urls import NoReverseMatch, reverse

from scoring.models import Run
from scoring.web import selectors
from scoring.web.access import may_control
from scoring.web.gate import run_baseline_status, run_flaky, run_gate
from scoring.web.run_state import run_labels, run_state

SCENARIO_PLACEHOLDER = "__scenario__"


def listen_url(run_id: int, scenario: str) -> str:
    """The Listen endpoint of one running voice scenario."""
    try:
        return reverse("voice:listen_offer", kwargs={"run_id": run_id, "scenario": scenario})
    except NoReverseMatch:
        return f"/voice/listen/{run_id}/{scenario}/offer/"


def run_page_context(run: Run, user: Any) -> dict[str, Any]:
    controls = may_control(user, run.owner_id)
    state = run_state(run, may_control=controls)
    in_flight = selectors.run_in_flight(run) if state.status == Run.Status.RUNNING else []
    results = list(selectors.run_results(run))
    return {
        "run": run,
        "state": state,
        "labels": run_labels(run),
        "tags": [tag.name for tag in run.tags.all()],
        "flags": selectors.run_flags(run),
        "signal_counts": selectors.run_signal_counts(results),
        "rows": selectors.run_result_rows(run, results),
        "charts": selectors.run_charts(results),
        "conditions": selectors.run_condition_figures(run, results),
        "summary_figures": selectors.summary_figures(run),
        "review_counts": selectors.run_review_counts(run),
        "failing_count": selectors.run_failing_count(results),
        "in_flight": [(name, listen_url(run.pk, name)) for name in in_flight],
        "listen_url_template": listen_url(run.pk, SCENARIO_PLACEHOLDER),
        "scenario_placeholder": SCENARIO_PLACEHOLDER,
        "may_control": controls,
        "baseline_status": run_baseline_status(run, may_control=controls),
        "gate": run_gate(run, status=state.status),
        "flaky": run_flaky(run),
        "has_session_dir": Path(run.session_dir).is_dir(),
    }
