"""Pages and signalling endpoints of the voice room (human calls, listening in on live calls)."""
from __future__ import annotations

from django.urls import path  # noqa: F401 - patterns are added beside the features

from voice.human import views as call_views
from voice.listen import views as listen_views

app_name = "voice"

urlpatterns: list = [
    path("listen/<int:run_id>/<str:scenario>/offer/", listen_views.listen_offer, name="listen_offer"),
    path("calls/<str:call_id>/offer/", call_views.call_offer, name="call_offer"),
    path("calls/<str:call_id>/hangup/", call_views.call_hangup, name="call_hangup"),
]
