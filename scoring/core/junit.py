"""JUnit XML for CI systems: one test case per scenario attempt (scenario × trial).

CI test views (GitHub Actions reporters, GitLab's test report, Jenkins) show a case as
``classname.name``; the class is the domain and dataset group, so a failure reads
``eva_airline.1.x.voluntary_date_change`` and the cases group by 1.x … 7.x. A failed case says
why in its message (stop reason, failed signals, database diff) so nobody has to open the session
directory to triage; the time is the scenario's measured duration.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scenarios.registry import scenario_group
from scoring.core.aggregate import domain_of
from scoring.core.attempt_names import recorded_condition
from scoring.core.gate import attempt_key, attempt_verdict, recorded_dir, scenario_and_trial
from scoring.core.signals import agent_turn_count, is_stalled
from scoring.core.values import is_number

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


@dataclass(frozen=True)
class JUnitContext:
    """What the writer needs beyond the metrics, gathered by the caller (registry, databases)."""

    suite_name: str
    min_agent_turns: int
    trials: int = 1
    eva_ids: Mapping[str, str] = field(default_factory=dict)
    """Scenario name → dataset id (``"1.1.2"``), for the group in the class name."""
    db_diffs: Mapping[tuple[str, int], str] = field(default_factory=dict)
    """(scenario, trial) → one-line database diff summary of a failed attempt."""


def case_names(metrics: Mapping[str, Any], context: JUnitContext) -> tuple[str, str]:
    """``(classname, name)``: ``("eva_airline.1.x", "voluntary_date_change")``; with trials the
    name carries ``[trial k]`` so each attempt is its own case."""
    scenario, trial = scenario_and_trial(metrics)
    domain = domain_of(scenario)
    short = scenario.split("__", 1)[1] if "__" in scenario else scenario
    group = scenario_group(context.eva_ids.get(scenario))
    classname = f"{domain}.{group}" if group != "other" else domain
    condition = recorded_condition(metrics)
    name = f"{short} [{condition}]" if condition else short
    return classname, f"{name} [trial {trial}]" if context.trials > 1 else name


def failure_lines(metrics: Mapping[str, Any], context: JUnitContext) -> list[str]:
    """Why an attempt failed, most telling first: stall, stop reason, failed signals, DB diff."""
    lines = []
    turns = agent_turn_count(metrics, recorded_dir(metrics))
    if is_stalled(turns, context.min_agent_turns):
        lines.append(f"stalled: {turns} agent LLM response(s) < {context.min_agent_turns}")
    lines.append(f"stop reason: {metrics.get('stop_reason', '?')}")
    failed = _failed_signals(metrics)
    if failed:
        lines.append(f"failed signals: {', '.join(failed)}")
    diff = context.db_diffs.get(attempt_key(metrics))
    if diff:
        lines.append(f"DB diff: {diff}")
    return lines


def _failed_signals(metrics: Mapping[str, Any]) -> list[str]:
    breakdown = metrics.get("success_breakdown")
    failed = breakdown.get("failed") if isinstance(breakdown, Mapping) else None
    return [str(name) for name in failed] if isinstance(failed, list) else []


def junit_xml(metrics: Sequence[Mapping[str, Any]], context: JUnitContext) -> str:
    """The whole report: ``<testsuites>`` with one ``<testsuite>`` per domain, in queue order."""
    suites: dict[str, list[ET.Element]] = {}
    counts: dict[str, dict[str, float]] = {}
    for entry in metrics:
        classname, name = case_names(entry, context)
        seconds = entry.get("scenario_duration")
        seconds = float(seconds) if is_number(seconds) else 0.0
        case = ET.Element("testcase", classname=classname, name=name, time=f"{seconds:.3f}")
        outcome = _add_outcome(case, entry, context)
        directory = entry.get("scenario_directory")
        if isinstance(directory, str):
            ET.SubElement(case, "system-out").text = f"scenario directory: {directory}\n"
        domain = domain_of(scenario_and_trial(entry)[0])
        suites.setdefault(domain, []).append(case)
        tally = counts.setdefault(domain, {"tests": 0, "failures": 0, "skipped": 0, "time": 0.0})
        tally["tests"] += 1
        tally["time"] += seconds
        tally["failures"] += outcome == FAILED
        tally["skipped"] += outcome == SKIPPED
    root = ET.Element("testsuites", name=context.suite_name)
    for key in ("tests", "failures", "skipped"):
        root.set(key, str(int(sum(t[key] for t in counts.values()))))
    root.set("errors", "0")
    root.set("time", f"{sum(t['time'] for t in counts.values()):.3f}")
    for domain, cases in suites.items():
        tally = counts[domain]
        suite = ET.SubElement(root, "testsuite", name=domain, tests=str(int(tally["tests"])),
                              failures=str(int(tally["failures"])), errors="0",
                              skipped=str(int(tally["skipped"])), time=f"{tally['time']:.3f}")
        suite.extend(cases)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _add_outcome(case: ET.Element, metrics: Mapping[str, Any], context: JUnitContext) -> str:
    verdict = attempt_verdict(metrics, min_agent_turns=context.min_agent_turns)
    if verdict is None:
        ET.SubElement(case, "skipped", message="no applicable signal (is_successful N/A)")
        return SKIPPED
    if verdict:
        return PASSED
    lines = failure_lines(metrics, context)
    failed = _failed_signals(metrics)
    kind = "stalled" if lines[0].startswith("stalled") else (failed[0] if failed else "failed")
    failure = ET.SubElement(case, "failure", message="; ".join(lines), type=kind)
    failure.text = "\n".join(lines) + "\n"
    return FAILED
