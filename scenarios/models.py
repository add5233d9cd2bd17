"""``Scenario``: a read-only mirror of the registry for pages and the admin.

The registry (built from the data root) stays the source of truth that runs use; rows are written
only by ``services.scenario_mirror_sync``.
"""
from __future__ import annotations

from django.db import models


class Scenario(models.Model):
    name = models.CharField(max_length=200, unique=True)
    eva_id = models.CharField(max_length=20, blank=True, db_index=True)
    domain = models.CharField(max_length=100, db_index=True)
    description = models.TextField(blank=True)
    max_duration = models.IntegerField(null=True, blank=True)
    success_signals = models.JSONField(default=list)
    expected_db_hash = models.CharField(max_length=64, blank=True)
    initial_db_hash = models.CharField(max_length=64, blank=True)
    user_prompt = models.TextField(blank=True)
    agent_prompt = models.TextField(blank=True)
    is_seed = models.BooleanField(default=False)
    position = models.PositiveIntegerField(help_text="Registry order (the order --domain runs them).")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["position"]

    def __str__(self) -> str:
        return self.name
