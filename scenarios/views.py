"""Scenario catalogue page, read from the ``Scenario`` mirror."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from scenarios.selectors import scenario_list


def catalogue(request: HttpRequest) -> HttpResponse:
    """Every mirrored scenario in registry order."""
    return render(request, "scenarios/list.html", {"scenarios": scenario_list()})
