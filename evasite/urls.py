"""URL configuration."""
from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from voice.human.views import call_page

urlpatterns = [
    path("admin/", admin.site.urls),
    # Django's own login/logout views (templates/registration/), styled like the site; the
    # password-reset pages only when mail is configured.
    path("accounts/", include("evasite.account_urls")),
    # A human tester's call page (voice/human/); before the catalogue's include.
    path("scenarios/<str:name>/call/", call_page, name="scenario_call"),
    path("scenarios/", include("scenarios.urls")),
    path("voice/", include("voice.urls")),
    path("", include("scoring.urls")),
]
