"""The run list's filters and pages: by text (name, timestamp, note), tag, agent, modality and
source, newest first. Benchmark runs (command line and site) are the default view; human calls are
their own source, so a person's call never counts among the benchmark runs unless asked for.

Query values come from the address bar, so each is checked against what exists and an unknown
value simply matches nothing instead of failing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.db.models import Q, QuerySet

from scoring.models import TAG_MAX, Run
from voice.modality import MODALITIES

PAGE_SIZE = 25
MAX_QUERY_CHARS = 100
SOURCE_CHOICES: tuple[tuple[str, str], ...] = (
    ("benchmark", "Benchmark runs (command line and site)"),
    ("cli", "Command line"),
    ("web", "Started on the site"),
    ("human", "Human calls"),
    ("all", "Everything"),
)
MODALITY_CHOICES: tuple[str, ...] = MODALITIES


@dataclass(frozen=True)
class RunFilters:
    q: str = ""
    tag: str = ""
    agent: str = ""
    modality: str = ""
    source: str = "benchmark"

    @classmethod
    def from_query(cls, query: Any) -> RunFilters:
        """Bounded, normalised filters from ``request.GET`` (anything unknown falls back)."""
        def text(name: str, limit: int) -> str:
            return " ".join(str(query.get(name, "") or "").split())[:limit]

        source = text("source", 20)
        modality = text("modality", 10)
        return cls(q=text("q", MAX_QUERY_CHARS), tag=text("tag", TAG_MAX).lower(), agent=text("agent", 200),
                   modality=modality if modality in MODALITY_CHOICES else "",
                   source=source if source in dict(SOURCE_CHOICES) else "benchmark")

    def apply(self, runs: QuerySet[Run]) -> QuerySet[Run]:
        if self.source == "benchmark":
            runs = runs.exclude(source=Run.Source.HUMAN)
        elif self.source != "all":
            runs = runs.filter(source=self.source)
        if self.q:
            runs = runs.filter(Q(name__icontains=self.q) | Q(timestamp__icontains=self.q) | Q(note__icontains=self.q))
        if self.tag:
            runs = runs.filter(tags__name=self.tag)
        if self.agent:
            runs = runs.filter(agent_model=self.agent)
        if self.modality:
            runs = runs.filter(modality=self.modality)
        return runs.distinct()

    @property
    def active(self) -> bool:
        return self != RunFilters()

    def query_string(self, **changes: Any) -> str:
        """The filters (plus ``changes``, e.g. a page number) as a query string, defaults left out."""
        values = {"q": self.q, "tag": self.tag, "agent": self.agent, "modality": self.modality,
                  "source": "" if self.source == "benchmark" else self.source, **changes}
        return urlencode({key: value for key, value in values.items() if value not in ("", None)})


def run_list_page(runs: QuerySet[Run], filters: RunFilters, page_number: Any) -> Page:
    """One page of the filtered runs (an out-of-range or junk page number gives the nearest page)."""
    filtered = filters.apply(runs).select_related("owner").prefetch_related("tags")
    return Paginator(filtered, PAGE_SIZE).get_page(page_number)


def filter_choices() -> dict[str, list[str]]:
    """The tags and agents the filter menus offer: those that occur on some run."""
    from scoring.models import RunTag

    return {
        "tags": list(RunTag.objects.filter(runs__isnull=False).distinct().values_list("name", flat=True)),
        "agents": sorted({a for a in Run.objects.values_list("agent_model", flat=True).distinct() if a}),
        "modalities": list(MODALITY_CHOICES),
        "sources": [list(choice) for choice in SOURCE_CHOICES],
    }
