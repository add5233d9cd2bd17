"""Admin for the scenario mirror: view only, since rows are rebuilt from the registry."""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from scenarios.models import Scenario


@admin.register(Scenario)
class ScenarioAdmin(admin.ModelAdmin):
    list_display = ("position", "name", "eva_id", "domain", "is_seed", "max_duration", "updated_at")
    list_filter = ("domain", "is_seed")
    search_fields = ("name", "description")
    ordering = ("position",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
