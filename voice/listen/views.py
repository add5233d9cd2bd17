"""The Listen endpoint: a thin view over ``voice.listen.service``. Runs belong to scoring/, which
voice/ does not import, so two settings name callables there: EVASITE_LISTEN_ACCESS decides who may
listen (``(user, run_id) -> True | False | None``, None meaning no such run) and
EVASITE_LISTEN_RUNS_HERE says whether this process coordinates a run (``(run_id) -> bool``); a
human tester's call hosted by this process counts as here too (voice.human.calls)."""
from __future__ import annotations

import json
from typing import Any, Callable

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
from django.utils.module_loading import import_string
from django.views.decorators.http import require_POST

from voice.human.calls import hosts_run
from voice.listen import service
from voice.webrtc.offer import OfferError

MAX_BODY_BYTES = 64 * 1024
MAX_SCENARIO_CHARS = 200


def _error(message: str, status: int) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _deny_all(user: object, run_id: int) -> bool:
    return False


def _named(setting: str, fallback: Callable[..., Any]) -> Callable[..., Any]:
    path = getattr(settings, setting, "")
    return import_string(path) if path else fallback


@login_not_required  # a fetch() needs a JSON 401, not a redirect to the login page
@require_POST
async def listen_offer(request: HttpRequest, run_id: int, scenario: str) -> JsonResponse:
    user = await request.auser()
    if not user.is_authenticated:
        return _error("Log in to listen.", 401)
    allowed = await sync_to_async(_named("EVASITE_LISTEN_ACCESS", _deny_all))(user, run_id)
    if allowed is None:
        return _error("No such run.", 404)
    if not allowed:
        return _error("Only the run's owner or staff may listen to it.", 403)
    if len(scenario) > MAX_SCENARIO_CHARS:
        return _error("No such scenario.", 404)
    if len(request.body) > MAX_BODY_BYTES:
        return _error("The offer is too large.", 413)
    try:
        payload = json.loads(request.body)
    except (ValueError, UnicodeDecodeError):
        return _error("The body must be JSON: {sdp, type}.", 400)
    run_is_here = bool(_named("EVASITE_LISTEN_RUNS_HERE", lambda run_id: True)(run_id)) or hosts_run(run_id)
    result = await service.listen_offer((run_id, scenario), payload, run_is_here=run_is_here)
    if result is service.NOT_LIVE_YET or result is service.NOT_REACHABLE:
        # the page asks again for a while when the call may still start
        return JsonResponse({"error": result.message, "not_live": True, "retry": result is service.NOT_LIVE_YET},
                            status=result.status)
    if isinstance(result, OfferError):
        return _error(result.message, result.status)
    return JsonResponse(result.as_json())
