"""The call page and its signalling endpoints. Thin: the brief, the call registry and the offer
checks live in their own modules."""
from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from scenarios.registry import get_eval_scenario, list_eval_scenarios
from voice.human.agents import builtin_agent_models, default_agent_model
from voice.human.brief import passenger_brief
from voice.human.calls import Call, CallError, get_call

MAX_OFFER_BYTES = 64_000


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


async def _owned_call(request: HttpRequest, call_id: str) -> Call | JsonResponse:
    user = await request.auser()
    if not user.is_authenticated:
        return JsonResponse({"error": "log in first"}, status=403)
    call = get_call(call_id)
    if call is None:
        return JsonResponse({"error": "no such call"}, status=404)
    if not call.may_control(user):
        return JsonResponse({"error": "this call belongs to someone else"}, status=403)
    return call


@require_POST
async def call_offer(request: HttpRequest, call_id: str) -> JsonResponse:
    """The browser's SDP offer in, the server's answer out (JSON ``{"sdp", "type"}``)."""
    call = await _owned_call(request, call_id)
    if isinstance(call, JsonResponse):
        return call
    if len(request.body) > MAX_OFFER_BYTES:
        return JsonResponse({"error": "offer too large"}, status=413)
    try:
        payload = json.loads(request.body or b"null")
    except ValueError:
        return JsonResponse({"error": "the offer is not JSON"}, status=400)
    try:
        return JsonResponse(await call.offer(payload))
    except CallError as exc:
        return JsonResponse({"error": str(exc)}, status=exc.status)


@require_POST
async def call_hangup(request: HttpRequest, call_id: str) -> JsonResponse:
    """Hang up without the WebSocket (the page's last act when its tab is closed)."""
    call = await _owned_call(request, call_id)
    if isinstance(call, JsonResponse):
        return call
    return JsonResponse({"hung_up": call.hang_up("The caller hung up.")})
