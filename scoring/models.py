"""Runs and per-scenario results. Rows mirror the artifact files (harness.md §20): a result keeps
the complete metrics.json dict, a few columns for filtering, and the agent's final database."""
from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.db import models
from django.urls import reverse

RUN_NAME_MAX = 120
RUN_NOTE_MAX = 4000
TAG_MAX = 32


class RunTag(models.Model):
    """A label people put on runs ("baseline", "whisper-base") to find and group them."""

    name = models.CharField(max_length=TAG_MAX, unique=True,
                            help_text="Lower case letters, digits, '.', '_' and '-'.")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Run(models.Model):
    """One session directory ``eval_<timestamp>``; ``--resume`` updates the same row."""

    class Status(models.TextChoices):
        RUNNING = "running", "running"
        FINISHED = "finished", "finished"
        FAILED = "failed", "failed"
        INTERRUPTED = "interrupted", "interrupted"

    class Source(models.TextChoices):
        CLI = "cli", "command line"
        WEB = "web", "web"
        HUMAN = "human", "human session"

    timestamp = models.CharField(max_length=32, help_text="YYYYMMDD_HHMMSS of eval_<timestamp>.")
    session_dir = models.CharField(max_length=1024, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.CLI)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs",
        help_text="Who started it from the site (a human session's tester); empty for the CLI.")
    executor = models.CharField(max_length=16, default="local", help_text="local or celery.")
    coordinator_host = models.CharField(max_length=255, blank=True,
                                        help_text="Host of the process coordinating the run.")
    coordinator_pid = models.PositiveIntegerField(
        null=True, blank=True, help_text="Its process id: a running run whose process is gone is interrupted.")
    coordinator_seen_at = models.DateTimeField(
        null=True, blank=True,
        help_text="The coordinator's last heartbeat: how another host tells that it is gone (scoring.runs.liveness).")
    takeovers = models.PositiveSmallIntegerField(
        default=0, help_text="Times a worker resumed it after its coordinator died (scoring.runs.takeover).")
    started_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    domain = models.CharField(max_length=64, blank=True)
    modality = models.CharField(max_length=8, blank=True)
    agent_model = models.CharField(max_length=200, blank=True)
    user_model = models.CharField(max_length=200, blank=True)
    trials = models.PositiveIntegerField(default=1)
    scenario_names = models.JSONField(default=list)
    parsed_args = models.JSONField(default=dict, help_text="Invocation flags, keys redacted.")
    total_scenarios = models.PositiveIntegerField(default=0)
    completed_scenarios = models.PositiveIntegerField(default=0)
    successful_scenarios = models.PositiveIntegerField(default=0)
    success_rate = models.FloatField(null=True, blank=True)
    summary_text = models.TextField(blank=True, help_text="all_summary.txt as written.")
    error = models.TextField(blank=True)
    name = models.CharField(max_length=RUN_NAME_MAX, blank=True,
                            help_text="A name people give the run (eval_<timestamp> when empty).")
    note = models.TextField(blank=True, max_length=RUN_NOTE_MAX, help_text="Free text by the owner.")
    tags = models.ManyToManyField(RunTag, blank=True, related_name="runs")
    baseline = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="gated_runs",
        help_text="The run a site-started run was gated against when it finished.")
    gate = models.JSONField(
        default=dict, blank=True,
        help_text="The gate's verdict against the baseline as it stood when the run finished "
                  "(scoring.core.gate_record); empty without a baseline.")

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"eval_{self.timestamp}"

    def get_absolute_url(self) -> str:
        return reverse("scoring:run_detail", args=[self.pk])

    @property
    def title(self) -> str:
        """What pages call the run: its name, else its session directory's name."""
        return self.name or str(self)


class BaselineMark(models.Model):
    """A press of "Use as baseline" on a run: the latest mark is the site's baseline, which the New-run
    form preselects. Marks are kept (who chose which baseline, when); deleting a run drops its
    marks, so the previous baseline applies again."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="baseline_marks")
    marked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="baseline_marks")
    marked_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-marked_at", "-pk"]

    def __str__(self) -> str:
        return f"baseline {self.run} ({self.marked_at:%Y-%m-%d %H:%M})"


class ScenarioResult(models.Model):
    """The accepted attempt of one scenario (one trial) of a run."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="results")
    scenario_name = models.CharField(max_length=200)
    trial = models.PositiveIntegerField(default=1)
    condition = models.CharField(max_length=200, blank=True, default="",
                                 help_text="The condition's name under --conditions; empty in a run without them.")
    position = models.PositiveIntegerField(default=0, help_text="Queue order within the run.")
    directory = models.CharField(max_length=1024)
    metrics = models.JSONField(help_text="The complete metrics.json of the scenario.")
    is_successful = models.BooleanField(null=True, help_text="Null when metrics say N/A.")
    is_task_successful = models.BooleanField(null=True)
    db_state_match = models.BooleanField(null=True)
    clean_exit = models.BooleanField(null=True)
    insufficient_agent_turns = models.BooleanField(default=False)
    stop_reason = models.CharField(max_length=32, blank=True)
    total_turns = models.PositiveIntegerField(default=0)
    scenario_duration = models.FloatField(default=0.0)
    auto_retry_count = models.PositiveIntegerField(default=0)
    judge_score = models.FloatField(null=True, blank=True)
    final_db_json = models.TextField(
        blank=True, help_text="Agent's final database as JSON text (key order kept, unlike jsonb)."
    )
    recorded_at = models.DateTimeField(auto_now=True)

    class ReviewVerdict(models.TextChoices):
        AGREES = "agrees", "agrees with the automatic verdict"
        DISAGREES = "disagrees", "disagrees with the automatic verdict"

    reviewed = models.BooleanField(default=False)
    review_verdict = models.CharField(max_length=16, choices=ReviewVerdict.choices, blank=True)
    review_note = models.TextField(blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="reviews")
    reviewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "position", "trial"]
        constraints = [
            models.UniqueConstraint(fields=["run", "scenario_name", "trial", "condition"],
                                    name="one_result_per_trial_and_condition"),
        ]

    def __str__(self) -> str:
        condition = f", {self.condition}" if self.condition else ""
        return f"{self.scenario_name} (trial {self.trial}{condition})"

    @property
    def key(self) -> tuple[str, int, str]:
        """What a run keeps one result for (``QueueItem.key``)."""
        return self.scenario_name, self.trial, self.condition

    def get_absolute_url(self) -> str:
        return reverse("scoring:result_detail", args=[self.pk])

    @property
    def final_db(self) -> dict[str, Any] | None:
        return json.loads(self.final_db_json) if self.final_db_json else None

    @property
    def turns(self) -> list[dict[str, Any]]:
        return self.metrics.get("turns", [])

    @property
    def latencies(self) -> list[dict[str, Any]]:
        return self.metrics.get("latencies", [])

    @property
    def token_usage(self) -> dict[str, Any]:
        return self.metrics.get("token_usage", {})
