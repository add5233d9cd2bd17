"""WebSocket routes."""
from __future__ import annotations

from django.urls import path

from scoring.web.consumers import RunProgressConsumer
from voice.human.consumers import call_routes

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", RunProgressConsumer.as_asgi()),
    *call_routes(),
]
