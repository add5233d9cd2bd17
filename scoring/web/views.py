"""Pages of runs and results (harness.md §20), and the controls that start, cancel and resume runs.

Each view fetches through ``scoring.web.selectors`` or calls a ``scoring.web`` service and renders;
the rules live there. The controls are async views so a started run is a task of the server's
event loop, off the request path.
"""
from __future__ import annotations

import mimetypes
from pathlib import Path

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_POST

from scoring.web import selectors
from scoring.models import Run, ScenarioResult
from scoring.runs.runner import RunError
from scoring.web import launcher
from scoring.web.access import may_control, public_results
from scoring.web.archive import session_zip
from scoring.web.forms import RunForm
from scoring.web.recovery import recover_orphaned_runs

SCENARIO_PLACEHOLDER = "__scenario__"


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


def listen_url(run_id: int, scenario: str) -> str:
    """The Listen endpoint of one running voice scenario (the voice app's URL once it exists)."""
    try:
        return reverse("voice:listen_offer", kwargs={"run_id": run_id, "scenario": scenario})
    except NoReverseMatch:
        return f"/voice/listen/{run_id}/{scenario}/offer/"


@public_results
def run_list(request: HttpRequest) -> HttpResponse:
    """All stored runs, newest first."""
    recover_orphaned_runs()
    return render(request, "scoring/run_list.html", {"runs": selectors.run_list()})


@public_results
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One run: controls, live progress, charts, results table, summary figures and flags."""
    run = _run_or_404(pk)
    if run.status == Run.Status.RUNNING and recover_orphaned_runs():
        run = _run_or_404(pk)
    context = {
        "run": run,
        "flags": selectors.run_flags(run),
        "signal_counts": selectors.run_signal_counts(run),
        "results": selectors.run_results(run),
        "charts": selectors.run_charts(run),
        "summary_figures": selectors.summary_figures(run),
        "review_counts": selectors.run_review_counts(run),
        "failing_count": selectors.run_failing_count(run),
        "in_flight": [(name, listen_url(run.pk, name)) for name in selectors.run_in_flight(run)],
        "listen_url_template": listen_url(run.pk, SCENARIO_PLACEHOLDER),
        "scenario_placeholder": SCENARIO_PLACEHOLDER,
        "may_control": may_control(request.user, run.owner_id),
        "has_session_dir": Path(run.session_dir).is_dir(),
    }
    return render(request, "scoring/run_detail.html", context)


@public_results
def result_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One scenario result: verdicts, review, conversation with tool calls, latencies, tokens, diff."""
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
        "timeline": selectors.result_timeline(result),
        "token_rows": selectors.result_token_rows(result),
    }
    return render(request, "scoring/result_detail.html", context)


@public_results
def result_artifact(request: HttpRequest, pk: int, name: str) -> FileResponse:
    """Serve one allow-listed artifact file of a result; 404 for anything else."""
    path = selectors.result_artifact_path(_result_or_404(pk), name)
    if path is None:
        raise Http404("No such artifact.")
    content_type, _ = mimetypes.guess_type(path.name)
    if path.suffix == ".txt":
        content_type = "text/plain; charset=utf-8"
    return FileResponse(path.open("rb"), content_type=content_type or "application/octet-stream")


@public_results
def run_archive(request: HttpRequest, pk: int) -> FileResponse:
    """The run's session directory as ``eval_<TS>.zip``."""
    run = _run_or_404(pk)
    session = Path(run.session_dir)
    if not session.is_dir():
        raise Http404("The run's session directory is not on this server.")
    return FileResponse(session_zip(session), as_attachment=True, filename=f"{run}.zip",
                        content_type="application/zip")


@public_results
def run_compare(request: HttpRequest) -> HttpResponse:
    """``?a=<id>&b=<id>``: two runs side by side per scenario, flips first."""
    context: dict = {"runs": selectors.run_list(), "a": None, "b": None, "rows": []}
    ids = {}
    for side in ("a", "b"):
        try:
            ids[side] = int(request.GET.get(side, ""))
        except ValueError:
            continue
    if "a" in ids:
        context["a"] = _run_or_404(ids["a"])  # preselected in the picker ("Compare with…")
    if len(ids) < 2:
        return render(request, "scoring/compare.html", context)
    a, b = context["a"], _run_or_404(ids["b"])
    rows = selectors.compare_runs(a, b)
    context.update(a=a, b=b, rows=rows, flips=sum(1 for row in rows if row.flip))
    return render(request, "scoring/compare.html", context)


async def run_new(request: HttpRequest) -> HttpResponse:
    """The run form; a valid submission starts the run in this server and goes to its page."""
    form = RunForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = await request.auser()
        try:
            run_id = await launcher.start(form.options, owner_id=user.pk)
        except RunError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("scoring:run_detail", pk=run_id)
    return await sync_to_async(render)(request, "scoring/run_new.html", {"form": form})


async def _controlled_run(request: HttpRequest, pk: int) -> Run | HttpResponse:
    run = await sync_to_async(selectors.run_get)(pk)
    if run is None:
        raise Http404("No such run.")
    if not may_control(await request.auser(), run.owner_id):
        return HttpResponseForbidden("Only the user who started this run, or staff, may control it.")
    return run


@require_POST
async def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Cancel: in-flight scenarios end, the run becomes interrupted and resumable."""
    run = await _controlled_run(request, pk)
    if isinstance(run, HttpResponse):
        return run
    if not await launcher.cancel(run.pk):
        messages.warning(request, "This run is not coordinated by this server (a CLI run, or already over); "
                                  "stop it where it runs (Ctrl-C).")
    return redirect("scoring:run_detail", pk=run.pk)


@require_POST
async def run_resume(request: HttpRequest, pk: int) -> HttpResponse:
    """Resume: the ``--resume`` path on the same session directory and row."""
    run = await _controlled_run(request, pk)
    if isinstance(run, HttpResponse):
        return run
    if run.status == Run.Status.RUNNING:
        await sync_to_async(recover_orphaned_runs)()
        run = await sync_to_async(selectors.run_get)(pk)
    complete = run.status == Run.Status.FINISHED and run.completed_scenarios >= run.total_scenarios
    if run.status == Run.Status.RUNNING or complete:
        messages.warning(request, "Nothing to resume: the run is running or complete.")
        return redirect("scoring:run_detail", pk=run.pk)
    options = launcher.resume_options(run.parsed_args or {}, timestamp=run.timestamp, session_dir=run.session_dir)
    try:
        await launcher.start(options, owner_id=run.owner_id)
    except RunError as exc:
        messages.error(request, str(exc))
    return redirect("scoring:run_detail", pk=run.pk)
