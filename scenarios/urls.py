"""Scenario catalogue pages."""
from __future__ import annotations

from django.urls import path

from scenarios import views

app_name = "scenarios"

urlpatterns = [
    path("", views.catalogue, name="list"),
]
