"""URL configuration."""
from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    # Django's own login/logout views (templates/registration/), styled like the site.
    path("accounts/", include("django.contrib.auth.urls")),
    path("scenarios/", include("scenarios.urls")),
    path("voice/", include("voice.urls")),
    path("", include("scoring.urls")),
]
