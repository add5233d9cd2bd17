"""Results pages."""
from __future__ import annotations

from django.urls import path

from scoring import views

app_name = "scoring"

urlpatterns = [
    path("", views.run_list, name="run_list"),
    path("runs/<int:pk>/", views.run_detail, name="run_detail"),
    path("results/<int:pk>/", views.result_detail, name="result_detail"),
    # <path:> so the two bot_logs_*/llm_context.json names fit; the selector's allow-list decides.
    path("results/<int:pk>/artifact/<path:name>", views.result_artifact, name="result_artifact"),
]
