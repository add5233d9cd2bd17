"""Pages of runs and results (harness.md §20), and the controls that start, cancel and resume runs.

Each view fetches through ``scoring.web.selectors`` (and the presenters beside it) or calls a
``scoring.web`` service, then renders; the rules live there. GET views never write. The run
controls are async views so a started run is a task of the server's event loop, off the request
path.
"""
from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from scenarios.registry import list_eval_scenarios
from scoring.models import Run, ScenarioResult
from scoring.runs.options.entry import default_concurrency
from scoring.runs.options.resume_defaults import resume_options
from scoring.runs.runner import RunError, select_scenarios
from scoring.web import launcher, selectors, services
from scoring.web.access import may_control, public_results
from scoring.web.annotation_forms import ReviewForm, RunAnnotationForm
from scoring.web.archive import session_zip
from scoring.web.compare import differing_flags
from scoring.web.diff_outline import diff_outline
from scoring.web.forms import RunForm
from scoring.web.gate import compare_gate
from scoring.web.ranges import ranged_file_response
from scoring.web.recovery import recover_orphaned_runs
from scoring.web.review_queue import result_neighbours
from scoring.web.run_list import RunFilters, filter_choices, run_list_page
from scoring.web.run_page import run_page_context
from scoring.web.run_state import cancel_refusal, run_labels, run_orphaned, run_state
from scoring.web.start_plan import StartPlan, plan_inputs, start_plan


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


@public_results
@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    """Stored runs, newest first, filtered and paginated; tick two to compare them."""
    filters = RunFilters.from_query(request.GET)
    page = run_list_page(selectors.run_list(), filters, request.GET.get("page"))
    rows = [(run, run_labels(run), run_state(run, may_control=False)) for run in page.object_list]
    return render(request, "scoring/run_list.html", {
        "page": page, "rows": rows, "filters": filters, "choices": filter_choices(),
        "previous_query": filters.query_string(page=page.previous_page_number()) if page.has_previous() else "",
        "next_query": filters.query_string(page=page.next_page_number()) if page.has_next() else "",
    })


@public_results
@require_GET
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One run: controls, live progress, charts, results table, summary figures and flags."""
    run = _run_or_404(pk)
    context = run_page_context(run, request.user)
    if context["may_control"]:
        context["annotation_form"] = RunAnnotationForm(initial={
            "name": run.name, "tags": ", ".join(context["tags"]), "note": run.note})
    return render(request, "scoring/run_detail.html", context)


@public_results
@require_GET
def run_panels(request: HttpRequest, pk: int) -> HttpResponse:
    """The run page's changing parts, fetched by its script after each live event."""
    return render(request, "scoring/run/panels.html", run_page_context(_run_or_404(pk), request.user))


@require_POST
def run_annotate(request: HttpRequest, pk: int) -> HttpResponse:
    """Owner or staff: set the run's name, tags and note."""
    run = _run_or_404(pk)
    if not may_control(request.user, run.owner_id):
        return HttpResponseForbidden("Only the user who started this run, or staff, may edit it.")
    form = RunAnnotationForm(request.POST)
    if form.is_valid():
        services.run_annotate(run_id=run.pk, name=form.cleaned_data["name"], tags=form.cleaned_data["tags"],
                              note=form.cleaned_data["note"])
        messages.success(request, "Saved the run's name, tags and note.")
    else:
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, error)
    return redirect("scoring:run_detail", pk=run.pk)


@require_POST
def run_use_as_baseline(request: HttpRequest, pk: int) -> HttpResponse:
    """Owner or staff: make this run the site's baseline, which the New-run form preselects."""
    run = _run_or_404(pk)
    if not may_control(request.user, run.owner_id):
        return HttpResponseForbidden("Only the user who started this run, or staff, may make it the baseline.")
    try:
        services.run_mark_baseline(run_id=run.pk, user_id=request.user.pk)
    except services.BaselineRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{run.title} is now the site's baseline: new runs are gated against it "
                                  "unless you choose otherwise.")
    return redirect("scoring:run_detail", pk=run.pk)


@public_results
@require_GET
def result_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One scenario result: review, verdicts, conversation with tool calls, latencies, tokens, diff."""
    result = _result_or_404(pk)
    # The diff explains a hash mismatch; for a match (or no DB signal) there is nothing to explain.
    diff = selectors.result_db_diff(result) if result.db_state_match is False else None
    may_review = may_control(request.user, result.run.owner_id)
    context = {
        "result": result,
        "run": result.run,
        "labels": run_labels(result.run),
        "label": selectors.result_label(result),
        "metrics": result.metrics or {},
        "verdicts": selectors.result_verdicts(result),
        "diff": diff,
        "diff_nodes": diff_outline(diff) if diff is not None else [],
        "artifacts": selectors.result_artifacts(result),
        "timeline": selectors.result_timeline(result),
        "token_rows": selectors.result_token_rows(result),
        "neighbours": result_neighbours(result),
        "may_review": may_review,
        "review_form": ReviewForm.for_result(result) if may_review else None,
        "condition": selectors.result_condition(result),
    }
    return render(request, "scoring/result_detail.html", context)


@require_POST
def result_review(request: HttpRequest, pk: int) -> HttpResponse:
    """Save a review (owner of the run or staff); then stay, or go to the next needing review."""
    result = _result_or_404(pk)
    if not may_control(request.user, result.run.owner_id):
        return HttpResponseForbidden("Only the run's owner or staff may review its results.")
    form = ReviewForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, error)
        return redirect("scoring:result_detail", pk=result.pk)
    data = form.cleaned_data
    services.scenario_result_review(result_id=result.pk, reviewer_id=request.user.pk, reviewed=data["reviewed"],
                                    verdict=data["verdict"], note=data["note"])
    messages.success(request, f"Review of {result.scenario_name} saved.")
    if data.get("after") == "next":
        following = result_neighbours(_result_or_404(pk)).next_unreviewed_id
        if following is not None:
            return redirect("scoring:result_detail", pk=following)
        messages.info(request, "Every result of this run is reviewed.")
        return redirect("scoring:run_detail", pk=result.run_id)
    return redirect("scoring:result_detail", pk=result.pk)


@public_results
@require_GET
def result_artifact(request: HttpRequest, pk: int, name: str) -> HttpResponse:
    """Serve one allow-listed artifact file of a result (byte ranges, so recordings seek); 404 else."""
    path = selectors.result_artifact_path(_result_or_404(pk), name)
    if path is None:
        raise Http404("No such artifact.")
    content_type, _ = mimetypes.guess_type(path.name)
    if path.suffix == ".txt":
        content_type = "text/plain; charset=utf-8"
    return ranged_file_response(request, path, content_type or "application/octet-stream")


@public_results
@require_GET
def run_archive(request: HttpRequest, pk: int) -> FileResponse:
    """The run's session directory as ``eval_<TS>.zip``."""
    run = _run_or_404(pk)
    session = Path(run.session_dir)
    if not session.is_dir():
        raise Http404("The run's session directory is not on this server.")
    return FileResponse(session_zip(session), as_attachment=True, filename=f"{run}.zip",
                        content_type="application/zip")


def _run_id(value: Any) -> int | None:
    try:
        number = int(str(value))
    except ValueError:
        return None
    return number if 0 < number < 2**63 else None


@public_results
@require_GET
def run_compare(request: HttpRequest) -> HttpResponse:
    """``?a=<id>&b=<id>`` (or two ticked ``run`` ids): two runs side by side, flips first, deltas
    with intervals; ``flips=1`` keeps the flips only; ``scenario=<name>`` reads one scenario of
    both runs side by side."""
    ticked = [number for number in map(_run_id, request.GET.getlist("run")[:3]) if number]
    if ticked:
        if len(ticked) != 2:
            messages.warning(request, "Tick exactly two runs to compare.")
            return redirect("scoring:run_list")
        older, newer = sorted(ticked)
        return redirect(f"{reverse('scoring:run_compare')}?a={older}&b={newer}")
    a_id, b_id = _run_id(request.GET.get("a", "")), _run_id(request.GET.get("b", ""))
    context: dict[str, Any] = {"runs": selectors.run_choices(), "a": None, "b": None,
                               "flips_only": request.GET.get("flips") == "1"}
    if a_id:
        context["a"] = _run_or_404(a_id)
    if b_id:
        context["b"] = _run_or_404(b_id)
    a, b = context["a"], context["b"]
    if a is None or b is None:
        return render(request, "scoring/compare.html", context)
    if a.pk == b.pk:
        context["same"] = True
        return render(request, "scoring/compare.html", context)
    comparison = selectors.compare_runs(a, b)
    rows = [row for row in comparison.rows if row.flip] if context["flips_only"] else comparison.rows
    gate = compare_gate(a, b)
    context.update(comparison=comparison, rows=rows, labels_a=run_labels(a), labels_b=run_labels(b),
                   flag_differences=differing_flags(selectors.run_flags(a), selectors.run_flags(b)),
                   gate=gate, flaky_names=gate.flaky_names,
                   conditions_a=selectors.run_condition_figures(a), conditions_b=selectors.run_condition_figures(b))
    scenario = str(request.GET.get("scenario", ""))[:200]
    if scenario:
        trial = _run_id(request.GET.get("trial", "1")) or 1
        context["side_by_side"] = selectors.compare_transcripts(a, b, scenario, trial)
    return render(request, "scoring/compare.html", context)


def _plan_for(form: RunForm) -> StartPlan:
    options = form.options
    return start_plan(scenarios=len(select_scenarios(options)), trials=options.trials, modality=options.modality,
                      concurrency=options.concurrency or default_concurrency(options),
                      agent_model=options.agent_model or "")


def _initial_for(request: HttpRequest) -> dict[str, Any] | None:
    """``?scenario=<name>`` (the "Run it" link of a scenario page) preselects that scenario."""
    name = request.GET.get("scenario", "")
    if name and name in list_eval_scenarios():
        return {"scope": "pick", "scenarios": [name]}
    return None


async def run_new(request: HttpRequest) -> HttpResponse:
    """The run form; a valid submission starts the run in this server and goes to its page. A big
    run (many attempts, or a long estimated wall time) asks once for confirmation first."""
    form = RunForm(request.POST or None, initial=_initial_for(request) if request.method == "GET" else None)
    plan, confirm = None, False
    # Checking reads the database (the baseline must be one of the offered runs): off the event loop.
    if request.method == "POST" and await sync_to_async(form.is_valid)():
        try:
            plan = await sync_to_async(_plan_for)(form)
        except RunError as exc:
            form.add_error(None, str(exc))
        if plan is not None and plan.is_big and request.POST.get("confirm") != plan.confirmation:
            confirm = True
        elif plan is not None:
            user = await request.auser()
            try:
                run_id = await launcher.start(form.options, owner_id=user.pk)
            except RunError as exc:
                form.add_error(None, str(exc))
            else:
                return redirect("scoring:run_detail", pk=run_id)
    inputs = await sync_to_async(plan_inputs)()
    return await sync_to_async(render)(request, "scoring/run_new.html",
                                       {"form": form, "plan": plan, "confirm": confirm, "plan_inputs": inputs})


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
    user = await request.auser()
    if await launcher.cancel(run.pk, by=user.get_username()):
        await sync_to_async(services.run_mark_cancelled)(run_id=run.pk, by=user.get_username())
        messages.success(request, "Cancelled. Finished scenarios keep their results; Resume runs the rest.")
    else:
        messages.warning(request, await sync_to_async(cancel_refusal)(run))
    return redirect("scoring:run_detail", pk=run.pk)


@require_POST
async def run_resume(request: HttpRequest, pk: int) -> HttpResponse:
    """Resume: the ``--resume`` path on the same session directory and row."""
    run = await _controlled_run(request, pk)
    if isinstance(run, HttpResponse):
        return run
    if await sync_to_async(run_orphaned)(run):
        await sync_to_async(recover_orphaned_runs)()  # the write a page only showed
        run = await sync_to_async(selectors.run_get)(pk)
    state = await sync_to_async(run_state)(run, may_control=True)
    if not state.may_resume:
        messages.warning(request, "There is nothing to resume: the run is still going, or every scenario has a result.")
        return redirect("scoring:run_detail", pk=run.pk)
    options = resume_options(run.parsed_args or {}, timestamp=run.timestamp, session_dir=run.session_dir)
    try:
        await launcher.start(options, owner_id=run.owner_id)
    except RunError as exc:
        messages.error(request, str(exc))
    return redirect("scoring:run_detail", pk=run.pk)
