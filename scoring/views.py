"""Read-only results pages (harness.md §20). Each view fetches through ``scoring.selectors`` and
renders; rules about what may be shown live in the selectors, not here."""
from __future__ import annotations

import mimetypes

from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from scoring import selectors
from scoring.models import Run, ScenarioResult


def _run_or_404(pk: int) -> Run:
    run = selectors.run_get(pk)
    if run is None:
        raise Http404("No such run.")
    return run


def _result_or_404(pk: int) -> ScenarioResult:
    result = selectors.scenario_result_get(pk)
    if result is None:
        raise Http404("No such result.")
    return result


def run_list(request: HttpRequest) -> HttpResponse:
    """All stored runs, newest first."""
    return render(request, "scoring/run_list.html", {"runs": selectors.run_list()})


def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One run: its flags, per-signal counts, results table and all_summary.txt."""
    run = _run_or_404(pk)
    context = {
        "run": run,
        "flags": selectors.run_flags(run),
        "signal_counts": selectors.run_signal_counts(run),
        "results": selectors.run_results(run),
    }
    return render(request, "scoring/run_detail.html", context)


def result_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One scenario result: verdicts, hashes, transcript, latencies, tokens, diff, artifacts."""
    result = _result_or_404(pk)
    # The diff explains a hash mismatch; for a match (or no DB signal) there is nothing to explain.
    diff = selectors.result_db_diff(result) if result.db_state_match is False else None
    context = {
        "result": result,
        "run": result.run,
        "metrics": result.metrics or {},
        "verdicts": selectors.result_verdicts(result),
        "diff": diff,
        "diff_nodes": selectors.diff_outline(diff) if diff is not None else [],
        "artifacts": selectors.result_artifacts(result),
    }
    return render(request, "scoring/result_detail.html", context)


def result_artifact(request: HttpRequest, pk: int, name: str) -> FileResponse:
    """Serve one allow-listed artifact file of a result; 404 for anything else."""
    path = selectors.result_artifact_path(_result_or_404(pk), name)
    if path is None:
        raise Http404("No such artifact.")
    content_type, _ = mimetypes.guess_type(path.name)
    if path.suffix == ".txt":
        content_type = "text/plain; charset=utf-8"
    return FileResponse(path.open("rb"), content_type=content_type or "application/octet-stream")
