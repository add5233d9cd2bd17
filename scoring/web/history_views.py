"""A scenario's page (/scenarios/<name>/): what it is about, the passenger's goal, its signals,
its latest results (human calls beside the simulated passenger's runs), and the ways to try it.
Thin over the catalogue mirror, the brief and ``scoring.web.scenario_history``."""
from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from scenarios.registry import get_eval_scenario, list_eval_scenarios, scenario_group
from scenarios.selectors import GROUP_THEMES, scenario_get
from scoring.web.scenario_history import scenario_history

LATEST = 20


def _goal(name: str) -> str:
    from voice.human.brief import passenger_brief

    try:
        return passenger_brief(get_eval_scenario(name)).goal
    except Exception:  # a scenario whose data is missing still gets its page
        return ""


@require_GET
def scenario_history_page(request: HttpRequest, name: str) -> HttpResponse:
    if name not in list_eval_scenarios():
        raise Http404(f"no scenario named {name!r}")
    mirror = scenario_get(name=name)
    cls = get_eval_scenario(name)
    eva_id = (mirror.eva_id if mirror else "") or getattr(cls, "eva_id", "")
    group = scenario_group(eva_id)
    return render(request, "scoring/scenario_history.html", {
        "scenario_name": name,
        "scenario": mirror,
        "description": (mirror.description if mirror else "") or getattr(cls, "description", "") or "",
        "eva_id": eva_id,
        "group": group,
        "theme": GROUP_THEMES.get(group, ""),
        "signals": list(mirror.success_signals if mirror else getattr(cls, "success_signals", ()) or ()),
        "goal": _goal(name),
        "rows": scenario_history(name, limit=LATEST),
    })
