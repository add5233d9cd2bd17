"""WebSocket routes."""
from __future__ import annotations

from django.urls import path

from scoring.consumers import RunProgressConsumer

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", RunProgressConsumer.as_asgi()),
]
