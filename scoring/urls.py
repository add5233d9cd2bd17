"""Runs and results pages, and the run controls."""
from __future__ import annotations

from django.urls import path

from scoring.web import views
from scoring.web.history_views import scenario_history_page

app_name = "scoring"

urlpatterns = [
    path("", views.run_list, name="run_list"),
    path("runs/new/", views.run_new, name="run_new"),
    path("runs/compare/", views.run_compare, name="run_compare"),
    path("runs/<int:pk>/", views.run_detail, name="run_detail"),
    path("runs/<int:pk>/panels/", views.run_panels, name="run_panels"),
    path("runs/<int:pk>/annotate/", views.run_annotate, name="run_annotate"),
    path("runs/<int:pk>/cancel/", views.run_cancel, name="run_cancel"),
    path("runs/<int:pk>/resume/", views.run_resume, name="run_resume"),
    path("runs/<int:pk>/artifacts.zip", views.run_archive, name="run_archive"),
    path("results/<int:pk>/", views.result_detail, name="result_detail"),
    path("results/<int:pk>/review/", views.result_review, name="result_review"),
    # /scenarios/ itself is the catalogue (scenarios.urls); one scenario's history lives here.
    path("scenarios/<str:name>/", scenario_history_page, name="scenario_history"),
    # <path:> so the two bot_logs_*/llm_context.json names fit; the selector's allow-list decides.
    path("results/<int:pk>/artifact/<path:name>", views.result_artifact, name="result_artifact"),
]
