"""Scenario catalogue page, read from the ``Scenario`` mirror."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from scenarios.selectors import MAX_QUERY_CHARS, scenario_catalogue, scenario_list


@require_GET
def catalogue(request: HttpRequest) -> HttpResponse:
    """Every mirrored scenario, grouped 1.x … 7.x, searchable (``?q=``; the page filters as you type)."""
    query = " ".join(str(request.GET.get("q", "")).split())[:MAX_QUERY_CHARS]
    groups = scenario_catalogue(query)
    return render(request, "scenarios/list.html", {
        "groups": groups, "query": query, "shown": sum(len(g.scenarios) for g in groups),
        "total": scenario_list().count(),
    })
