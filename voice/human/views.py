"""The call page. Its signalling rides on the call's WebSocket (``consumers.CallConsumer``)."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from scenarios.registry import get_eval_scenario, list_eval_scenarios
from voice.human.agents import builtin_agent_models, default_agent_model
from voice.human.brief import passenger_brief


@require_GET
@login_required
def call_page(request: HttpRequest, name: str) -> HttpResponse:
    if name not in list_eval_scenarios():
        raise Http404(f"no scenario named {name!r}")
    scenario = get_eval_scenario(name)
    return render(request, "voice/call.html", {
        "scenario_name": name,
        "scenario_description": getattr(scenario, "description", ""),
        "brief": passenger_brief(scenario),
        "agent_models": builtin_agent_models(),
        "default_agent_model": default_agent_model(),
    })
