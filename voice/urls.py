"""Pages and signalling endpoints of the voice room (human calls, listening in on live calls)."""
from __future__ import annotations

from django.urls import path  # noqa: F401 - patterns are added beside the features

app_name = "voice"

urlpatterns: list = []
