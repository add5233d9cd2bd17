"""Admin for runs and results: browse, filter and search; rows are written by the runner only."""
from __future__ import annotations

from django.contrib import admin

from scoring.models import Run, ScenarioResult


class ScenarioResultInline(admin.TabularInline):
    model = ScenarioResult
    fields = ("scenario_name", "trial", "is_successful", "db_state_match", "clean_exit", "stop_reason", "total_turns")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("__str__", "status", "source", "modality", "agent_model", "user_model",
                    "completed_scenarios", "total_scenarios", "success_rate", "started_at")
    list_filter = ("status", "source", "modality", "agent_model", "user_model", "domain")
    search_fields = ("timestamp", "session_dir", "agent_model", "user_model")
    readonly_fields = [field.name for field in Run._meta.fields]
    inlines = [ScenarioResultInline]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(ScenarioResult)
class ScenarioResultAdmin(admin.ModelAdmin):
    list_display = ("scenario_name", "trial", "run", "is_successful", "db_state_match", "clean_exit",
                    "stop_reason", "total_turns", "auto_retry_count")
    list_filter = ("is_successful", "db_state_match", "clean_exit", "insufficient_agent_turns",
                   "stop_reason", "run__modality", "run__agent_model")
    search_fields = ("scenario_name", "run__timestamp", "stop_reason")
    readonly_fields = [field.name for field in ScenarioResult._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False
