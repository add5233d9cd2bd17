"""Admin for runs and results: browse, filter and search. Rows are written by the runner; the
review fields go through ``scoring.web.services`` (the same rule as the review form on the
result page), as does re-scoring. A result's change page shows its transcript and its JSON
pretty-printed, and links to the result page ("View on site")."""
from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html, format_html_join

from scenarios.registry import get_eval_scenario_class, scenario_group
from scoring.models import BaselineMark, Run, RunTag, ScenarioResult
from scoring.web import services
from scoring.web.review import results_csv

REVIEW_FIELDS = ("reviewed", "review_verdict", "review_note")
JSON_PREVIEW_CHARS = 200_000


def _pretty_json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, indent=2, sort_keys=False)
    if len(text) > JSON_PREVIEW_CHARS:
        text = text[:JSON_PREVIEW_CHARS] + "\n… (cut; the full file is in the result directory)"
    return format_html('<pre style="white-space: pre-wrap; max-height: 40rem; overflow: auto">{}</pre>', text)


class ScenarioResultInline(admin.TabularInline):
    model = ScenarioResult
    fields = ("scenario_name", "trial", "is_successful", "db_state_match", "clean_exit", "stop_reason", "total_turns",
              "reviewed", "review_verdict")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("__str__", "name", "status", "source", "owner", "modality", "agent_model", "user_model",
                    "completed_scenarios", "total_scenarios", "success_rate", "started_at")
    list_filter = ("status", "source", "modality", "agent_model", "user_model", "domain", "tags")
    search_fields = ("timestamp", "name", "note", "session_dir", "agent_model", "user_model")
    readonly_fields = [field.name for field in Run._meta.fields if field.name not in ("name", "note")]
    filter_horizontal = ("tags",)
    inlines = [ScenarioResultInline]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(RunTag)
class RunTagAdmin(admin.ModelAdmin):
    search_fields = ("name",)


@admin.register(BaselineMark)
class BaselineMarkAdmin(admin.ModelAdmin):
    """Who made which run the site's baseline, and when (marks are made on the run page)."""

    list_display = ("run", "marked_by", "marked_at")
    readonly_fields = ("run", "marked_by", "marked_at")

    def has_add_permission(self, request) -> bool:
        return False


class ScenarioGroupFilter(admin.SimpleListFilter):
    """eva_airline groups 1.x ... 7.x, from the registry's dataset ids."""

    title = "scenario group"
    parameter_name = "group"

    def lookups(self, request, model_admin):
        names = ScenarioResult.objects.values_list("scenario_name", flat=True).distinct()
        groups = sorted({_group_of(name) for name in names})
        return [(group, group) for group in groups]

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        names = [n for n in queryset.values_list("scenario_name", flat=True).distinct() if _group_of(n) == self.value()]
        return queryset.filter(scenario_name__in=names)


def _group_of(name: str) -> str:
    cls = get_eval_scenario_class(name)
    return scenario_group(getattr(cls, "eva_id", "") if cls is not None else "")


@admin.register(ScenarioResult)
class ScenarioResultAdmin(admin.ModelAdmin):
    list_display = ("scenario_name", "trial", "run", "is_successful", "db_state_match", "clean_exit",
                    "stop_reason", "total_turns", "auto_retry_count", "reviewed", "review_verdict")
    list_filter = ("reviewed", "review_verdict", "stop_reason", ScenarioGroupFilter, "is_successful",
                   "db_state_match", "clean_exit", "insufficient_agent_turns", "run__modality", "run__agent_model")
    search_fields = ("scenario_name", "run__timestamp", "stop_reason", "review_note")
    _shown_raw = [field.name for field in ScenarioResult._meta.fields
                  if field.name not in REVIEW_FIELDS and field.name not in ("metrics", "final_db_json")]
    readonly_fields = [*_shown_raw, "transcript", "metrics_json", "final_db_pretty"]
    fieldsets = (
        ("Review", {"fields": REVIEW_FIELDS + ("reviewed_by", "reviewed_at")}),
        ("Conversation", {"fields": ("transcript",)}),
        ("Result", {"fields": [f for f in _shown_raw if f not in ("reviewed_by", "reviewed_at")]}),
        ("metrics.json", {"fields": ("metrics_json",), "classes": ("collapse",)}),
        ("Final database", {"fields": ("final_db_pretty",), "classes": ("collapse",)}),
    )
    actions = ("export_csv", "rescore")

    def has_add_permission(self, request) -> bool:
        return False

    @admin.display(description="Transcript")
    def transcript(self, obj: ScenarioResult) -> str:
        turns = [t for t in obj.turns if isinstance(t, dict)]
        if not turns:
            return "No turns were recorded."
        rows = format_html_join(
            "", "<tr><th style='text-transform: uppercase'>{}</th><td>{}{}</td></tr>",
            ((str(t.get("role") or "?"), str(t.get("text") or ""),
              format_html("<br><small>heard: {}</small>", t["heard"]) if t.get("heard") is not None else "")
             for t in turns))
        return format_html("<table>{}</table>", rows)

    @admin.display(description="metrics.json")
    def metrics_json(self, obj: ScenarioResult) -> str:
        return _pretty_json(obj.metrics or {})

    @admin.display(description="Agent's final database")
    def final_db_pretty(self, obj: ScenarioResult) -> str:
        return _pretty_json(obj.final_db) if obj.final_db_json else "Not stored."

    def save_model(self, request: HttpRequest, obj: ScenarioResult, form, change: bool) -> None:
        if any(name in form.changed_data for name in REVIEW_FIELDS):
            services.scenario_result_review(result_id=obj.pk, reviewer_id=request.user.pk, reviewed=obj.reviewed,
                                            verdict=obj.review_verdict, note=obj.review_note)
            obj.refresh_from_db()

    @admin.action(description="Export selected results as CSV")
    def export_csv(self, request: HttpRequest, queryset: QuerySet[ScenarioResult]) -> HttpResponse:
        rows = []
        for result in queryset.select_related("run", "reviewed_by"):
            row = {name: getattr(result, name) for name in ("scenario_name", "trial", "is_successful",
                                                            "is_task_successful", "db_state_match", "clean_exit",
                                                            "stop_reason", "total_turns", "scenario_duration",
                                                            "auto_retry_count", "reviewed", "review_verdict",
                                                            "review_note")}
            row["run"] = str(result.run)
            row["reviewed_by"] = result.reviewed_by.get_username() if result.reviewed_by else ""
            rows.append(row)
        response = HttpResponse(results_csv(rows), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="scenario_results.csv"'
        return response

    @admin.action(description="Re-score selected results from their stored metrics (no re-run)")
    def rescore(self, request: HttpRequest, queryset: QuerySet[ScenarioResult]) -> None:
        report = services.scenario_results_rescore(result_ids=list(queryset.values_list("pk", flat=True)))
        self.message_user(request, str(report), messages.INFO)
