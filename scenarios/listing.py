"""Text listings of registered scenarios (harness.md §19.1 ``--list-domains``, §19.4 ``--list``).

Pure module: no Django; ``run_eval`` and ``list_scenarios`` print these verbatim.
"""
from __future__ import annotations

from collections.abc import Iterable

from scenarios.registry import domain_of

LEGACY_LABEL = "(legacy, no domain prefix)"


def _split(names: Iterable[str]) -> tuple[list[str], dict[str, list[str]]]:
    legacy: list[str] = []
    grouped: dict[str, list[str]] = {}
    for name in names:
        domain = domain_of(name)
        if domain is None:
            legacy.append(name)
        else:
            grouped.setdefault(domain, []).append(name)
    return legacy, grouped


def format_scenario_list(names: Iterable[str]) -> str:
    """``Legacy scenarios:`` first (when any), then per sorted domain a blank line, ``<domain> domain:``
    and ``  - <name>`` lines sorted as strings (so ``eva_airline__1_1_3`` precedes the named seeds)."""
    legacy, grouped = _split(names)
    lines: list[str] = []
    if legacy:
        lines.append("Legacy scenarios:")
        lines += [f"  - {name}" for name in sorted(legacy)]
    for domain in sorted(grouped):
        lines += ["", f"{domain} domain:"]
        lines += [f"  - {name}" for name in sorted(grouped[domain])]
    return "\n".join(lines)


def format_domain_list(names: Iterable[str]) -> str:
    """``Available domains:`` then ``  - <domain> (<n> scenarios)`` per sorted domain, plus one line
    counting names without a domain prefix (when any)."""
    legacy, grouped = _split(names)
    lines = ["Available domains:"]
    lines += [f"  - {domain} ({len(grouped[domain])} scenarios)" for domain in sorted(grouped)]
    if legacy:
        lines.append(f"  - {LEGACY_LABEL} ({len(legacy)} scenarios)")
    return "\n".join(lines)
