"""Admin for runs and results: browse, filter and search; rows are written by the runner, except
the review fields, which a reviewer edits (reviewer and time are set on save)."""
from __future__ import annotations

from pathlib import Path

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from scenarios.registry import get_eval_scenario
from scoring.core.files import write_json
from scoring.models import Run, ScenarioResult
from scoring.services import scenario_result_record
from scoring.web.charts import scenario_group
from scoring.web.review import results_csv, rescored_metrics

REVIEW_FIELDS = ("reviewed", "review_verdict", "review_note")


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
    list_display = ("__str__", "status", "source", "owner", "modality", "agent_model", "user_model",
                    "completed_scenarios", "total_scenarios", "success_rate", "started_at")
    list_filter = ("status", "source", "modality", "agent_model", "user_model", "domain")
    search_fields = ("timestamp", "session_dir", "agent_model", "user_model")
    readonly_fields = [field.name for field in Run._meta.fields]
    inlines = [ScenarioResultInline]

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
    from scenarios.registry import get_eval_scenario_class

    cls = get_eval_scenario_class(name)
    return scenario_group(getattr(cls, "eva_id", "") if cls is not None else "")


@admin.register(ScenarioResult)
class ScenarioResultAdmin(admin.ModelAdmin):
    list_display = ("scenario_name", "trial", "run", "is_successful", "db_state_match", "clean_exit",
                    "stop_reason", "total_turns", "auto_retry_count", "reviewed", "review_verdict")
    list_filter = ("reviewed", "review_verdict", "stop_reason", ScenarioGroupFilter, "is_successful",
                   "db_state_match", "clean_exit", "insufficient_agent_turns", "run__modality", "run__agent_model")
    search_fields = ("scenario_name", "run__timestamp", "stop_reason", "review_note")
    readonly_fields = [field.name for field in ScenarioResult._meta.fields if field.name not in REVIEW_FIELDS]
    fieldsets = (
        ("Review", {"fields": REVIEW_FIELDS + ("reviewed_by", "reviewed_at")}),
        ("Result", {"fields": [f for f in readonly_fields if f not in ("reviewed_by", "reviewed_at")]}),
    )
    actions = ("export_csv", "rescore")

    def has_add_permission(self, request) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: ScenarioResult, form, change: bool) -> None:
        if any(name in form.changed_data for name in REVIEW_FIELDS):
            obj.reviewed_by = request.user
            obj.reviewed_at = timezone.now()
            if obj.review_verdict and not obj.reviewed:
                obj.reviewed = True  # a verdict is a review
        super().save_model(request, obj, form, change)

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
        changed = unchanged = skipped = 0
        for result in queryset:
            scenario = get_eval_scenario(result.scenario_name)
            if scenario is None:
                skipped += 1
                continue
            metrics = rescored_metrics(result.metrics or {}, scenario.success_signals or ())
            if metrics == result.metrics:
                unchanged += 1
                continue
            directory = result.directory
            scenario_result_record(run_id=result.run_id, metrics=metrics, position=result.position,
                                   trial=result.trial, final_db=result.final_db)
            metrics_file = Path(directory) / "metrics.json" if directory else None
            if metrics_file is not None and metrics_file.is_file():
                write_json(metrics_file, metrics)  # the row and the file keep agreeing
            changed += 1
        self.message_user(request, f"Re-scored: {changed} changed, {unchanged} unchanged, "
                                   f"{skipped} skipped (scenario no longer registered).", messages.INFO)
