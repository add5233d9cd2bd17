"""System checks for the scenario catalogue: ``manage.py check`` tells a new user what is missing
before anything runs (style.md, Django contrib habit)."""
from __future__ import annotations

import hashlib
from typing import Any

from django.core import checks

from scenarios import data_root, registry

EXPECTED_SCENARIO_COUNT = 50


def check_data_root(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """E001: the fixture directory is missing or incomplete. E002: the agent YAML is not the pinned file."""
    root = data_root.get_eval_data_root()
    problems = data_root.data_root_problems(root)
    hint = (
        "Set EVAL_DATA_ROOT to the eva_airline fixture directory (or its parent), "
        "or place it at ../shared/eva_airline."
    )
    errors: list[checks.CheckMessage] = [
        checks.Error(problem, hint=hint, obj=str(root), id="scenarios.E001") for problem in problems
    ]
    config_path = root / data_root.AGENT_CONFIG_FILE
    if config_path.is_file():
        digest = hashlib.sha256(config_path.read_bytes()).hexdigest()
        if digest != data_root.AGENT_CONFIG_SHA256:
            errors.append(
                checks.Error(
                    f"{config_path} has SHA-256 {digest}, expected {data_root.AGENT_CONFIG_SHA256}",
                    hint="Use the pinned airline_agent.yaml; never edit the fixture files.",
                    obj=str(config_path),
                    id="scenarios.E002",
                )
            )
    return errors


def check_registry(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """E003: fewer scenarios registered than the catalogue holds (usually a data-root problem)."""
    count = len(registry.list_eval_scenarios())
    if count >= EXPECTED_SCENARIO_COUNT:
        return []
    return [
        checks.Error(
            f"only {count} scenarios are registered, expected {EXPECTED_SCENARIO_COUNT} "
            f"(data root tried: {data_root.get_eval_data_root()})",
            hint="Fix the scenarios.E001/E002 errors and restart the process.",
            id="scenarios.E003",
        )
    ]
