"""What a New-run submission will start, said before it starts: how many attempts, in which
modality, and about how long it will take judging by this site's own history, so one click
cannot start all 50 scenarios in voice unnoticed. Big runs ask once for confirmation.

The estimate is the median duration of recent results in the same modality (the agent model's own
history when it has enough), times the attempts, divided by the concurrency.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from scenarios.registry import domains, list_eval_scenarios
from scoring.models import Run, ScenarioResult

HISTORY_RESULTS = 200
MIN_SAMPLES = 3
# A run this big asks once before it starts.
BIG_ATTEMPTS = {"voice": 5, "text": 60}
BIG_SECONDS = 15 * 60


@dataclass(frozen=True)
class History:
    """Median seconds per attempt by modality (and by ``modality/agent``), with sample counts."""

    seconds: dict[str, float]
    samples: dict[str, int]

    def per_attempt(self, modality: str, agent_model: str = "") -> tuple[float | None, int]:
        for key in (f"{modality}/{agent_model}", modality):
            if self.samples.get(key, 0) >= MIN_SAMPLES:
                return self.seconds[key], self.samples[key]
        return None, 0


def run_history(limit: int = HISTORY_RESULTS) -> History:
    """Durations of the latest finished benchmark results (human calls are people's pace)."""
    rows = (ScenarioResult.objects.filter(run__status=Run.Status.FINISHED, scenario_duration__gt=0)
            .exclude(run__source=Run.Source.HUMAN)
            .order_by("-recorded_at").values_list("run__modality", "run__agent_model", "scenario_duration")[:limit])
    grouped: dict[str, list[float]] = {}
    for modality, agent, duration in rows:
        grouped.setdefault(modality, []).append(duration)
        grouped.setdefault(f"{modality}/{agent}", []).append(duration)
    return History({key: float(statistics.median(values)) for key, values in grouped.items()},
                   {key: len(values) for key, values in grouped.items()})


@dataclass(frozen=True)
class StartPlan:
    scenarios: int
    trials: int
    modality: str
    concurrency: int
    seconds_per_attempt: float | None
    samples: int

    @property
    def attempts(self) -> int:
        return self.scenarios * self.trials

    @property
    def wall_seconds(self) -> float | None:
        if self.seconds_per_attempt is None:
            return None
        return math.ceil(self.attempts / max(1, self.concurrency)) * self.seconds_per_attempt

    @property
    def is_big(self) -> bool:
        wall = self.wall_seconds
        return self.attempts > BIG_ATTEMPTS.get(self.modality, BIG_ATTEMPTS["text"]) or (
            wall is not None and wall > BIG_SECONDS)

    @property
    def confirmation(self) -> str:
        """The token a confirmed submission carries: a changed plan asks again."""
        return f"{self.attempts}-{self.modality}-{self.concurrency}"

    @property
    def wall_text(self) -> str:
        return duration_text(self.wall_seconds)


def duration_text(seconds: float | None) -> str:
    """"about 4 min", "about 1 h 20 min", "under a minute"; "" when unknown."""
    if seconds is None:
        return ""
    if seconds < 60:
        return "under a minute"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"about {minutes} min"
    return f"about {minutes // 60} h {minutes % 60:02d} min"


def start_plan(*, scenarios: int, trials: int, modality: str, concurrency: int, agent_model: str = "",
               history: History | None = None) -> StartPlan:
    per_attempt, samples = (history or run_history()).per_attempt(modality, agent_model)
    return StartPlan(scenarios, max(1, trials), modality, max(1, concurrency), per_attempt, samples)


def plan_inputs() -> dict[str, Any]:
    """What the page's script needs to update the summary as fields change (counts per domain,
    the history, the thresholds)."""
    history = run_history()
    return {
        "total": len(list_eval_scenarios()),
        "domains": {domain: len(names) for domain, names in domains().items()},
        "seconds": history.seconds,
        "samples": history.samples,
        "min_samples": MIN_SAMPLES,
        "big_attempts": BIG_ATTEMPTS,
        "big_seconds": BIG_SECONDS,
    }
