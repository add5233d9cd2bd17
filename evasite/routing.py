"""WebSocket routes."""
from __future__ import annotations

from django.urls import path, re_path

from scoring.web.consumers import RunProgressConsumer
from evasite.ws_guards import NoRouteConsumer
from voice.human.consumers import call_routes

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", RunProgressConsumer.as_asgi()),
    *call_routes(),
    re_path(r"", NoRouteConsumer.as_asgi()),  # last: any other path is refused, never a 500
]
