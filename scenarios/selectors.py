"""Reads of the ``Scenario`` mirror for pages and commands."""
from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Q, QuerySet

from scenarios.models import Scenario
from scenarios.registry import scenario_group

MAX_QUERY_CHARS = 100
# eva_airline's module groups and what their scenarios are about (scenarios.md §4.2).
GROUP_THEMES = {
    "1.x": "Voluntary date and segment changes on round trips",
    "2.x": "Airline cancellations and delays: rebooking and vouchers",
    "3.x": "Missed flights and itinerary recovery",
    "4.x": "Same-day changes and fee waivers",
    "5.x": "Cancellations, cash refunds and travel credits",
    "6.x": "Hotel vouchers, alternate airports and transfer requests",
    "7.x": "Edge cases: missing details, fabricated disruptions, pressure for waivers",
}


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


@dataclass
class CatalogueGroup:
    key: str
    theme: str
    scenarios: list[Scenario] = field(default_factory=list)


def scenario_catalogue(query: str = "") -> list[CatalogueGroup]:
    """Mirrored scenarios grouped 1.x … 7.x (then "other"), registry order inside a group;
    ``query`` keeps those whose name, eva id or description contain every word of it."""
    scenarios = scenario_list()
    for word in " ".join(query.split())[:MAX_QUERY_CHARS].split():
        scenarios = scenarios.filter(Q(name__icontains=word) | Q(eva_id__icontains=word) | Q(description__icontains=word))
    groups: dict[str, CatalogueGroup] = {}
    for scenario in scenarios:
        key = scenario_group(scenario.eva_id)
        groups.setdefault(key, CatalogueGroup(key, GROUP_THEMES.get(key, "")))
        groups[key].scenarios.append(scenario)
    return sorted(groups.values(), key=lambda g: (g.key == "other", g.key.zfill(8)))
