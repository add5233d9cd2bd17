"""Signalling endpoints of the voice room (listening in on live calls; a human call signals over its
WebSocket)."""
from __future__ import annotations

from django.urls import path  # noqa: F401 - patterns are added beside the features

from voice.listen import views as listen_views

app_name = "voice"

urlpatterns: list = [
    path("listen/<int:run_id>/<str:scenario>/offer/", listen_views.listen_offer, name="listen_offer"),
]
