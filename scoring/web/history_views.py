"""The scenario history page (/scenarios/<name>/): thin over ``scoring.web.scenario_history``."""
from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from scenarios.registry import list_eval_scenarios
from scoring.web.scenario_history import scenario_history


def scenario_history_page(request: HttpRequest, name: str) -> HttpResponse:
    if name not in list_eval_scenarios():
        raise Http404(f"no scenario named {name!r}")
    return render(request, "scoring/scenario_history.html", {"scenario_name": name, "rows": scenario_history(name)})
