"""Reads of the ``Scenario`` mirror for pages and commands."""
from __future__ import annotations

from django.db.models import QuerySet

from scenarios.models import Scenario


def scenario_list(*, domain: str | None = None, is_seed: bool | None = None) -> QuerySet[Scenario]:
    """Mirrored scenarios in registry order, optionally filtered."""
    queryset = Scenario.objects.all()
    if domain is not None:
        queryset = queryset.filter(domain=domain)
    if is_seed is not None:
        queryset = queryset.filter(is_seed=is_seed)
    return queryset.order_by("position")


def scenario_get(*, name: str) -> Scenario | None:
    """One mirrored scenario by name, or None."""
    return Scenario.objects.filter(name=name).first()
