"""Scenario registry (scenarios.md §4).

Pure module: no Django. Registration order is meaningful: it is the order ``--domain`` runs
scenarios in, so the registry is an insertion-ordered dict and duplicates are an error.
"""
from __future__ import annotations

import importlib
from typing import Any, TypeVar

from scenarios.contract import EvalScenario

# Modules whose import registers every scenario; ``load_all`` imports them in this order.
DOMAIN_MODULES = ("scenarios.domains.eva_airline.catalogue",)
DOMAIN_SEPARATOR = "__"

_REGISTRY: dict[str, type[EvalScenario]] = {}
_EVA_IDS: dict[str, str] = {}

ScenarioClass = TypeVar("ScenarioClass", bound=type)


def registry_key(cls: type) -> str:
    """The name a class registers under: its ``name``, falling back to the class name."""
    return getattr(cls, "name", "") or cls.__name__


def register_eval_scenario(cls: ScenarioClass) -> ScenarioClass:
    """Class decorator: add ``cls`` to the registry. Duplicate names raise (upstream overwrote)."""
    if not isinstance(cls, type) or not issubclass(cls, EvalScenario):
        raise TypeError(f"{cls!r} is not an EvalScenario subclass")
    key = registry_key(cls)
    if key in _REGISTRY:
        raise ValueError(f"scenario name {key!r} is already registered by {_REGISTRY[key].__qualname__}")
    _REGISTRY[key] = cls
    eva_id = getattr(cls, "eva_id", "")
    if isinstance(eva_id, str) and eva_id:
        _EVA_IDS.setdefault(eva_id, key)
    return cls


def unregister_eval_scenario(name: str) -> None:
    """Remove ``name`` (test helper; a missing name is ignored)."""
    cls = _REGISTRY.pop(name, None)
    if cls is not None and _EVA_IDS.get(getattr(cls, "eva_id", "")) == name:
        del _EVA_IDS[cls.eva_id]


def get_eval_scenario_class(name: str) -> type[EvalScenario] | None:
    """The registered class, or None."""
    load_all()
    return _REGISTRY.get(name)


def get_eval_scenario(name: str, **kwargs: Any) -> EvalScenario | None:
    """A new instance of the scenario registered as ``name``, or None when unknown."""
    cls = get_eval_scenario_class(name)
    if cls is None:
        return None
    kwargs.setdefault("name", name)
    return cls(**kwargs)


def list_eval_scenarios() -> list[str]:
    """Registered names in registration order."""
    load_all()
    return list(_REGISTRY)


def name_for_eva_id(eva_id: str) -> str | None:
    """The registered name of the scenario built from dataset line ``eva_id``."""
    load_all()
    return _EVA_IDS.get(eva_id)


def resolve_scenario(name_or_eva_id: str, **kwargs: Any) -> EvalScenario:
    """Instance for a registered name or an eva id such as ``"1.1.2"``; LookupError otherwise."""
    name = name_or_eva_id if name_or_eva_id in list_eval_scenarios() else name_for_eva_id(name_or_eva_id)
    scenario = get_eval_scenario(name, **kwargs) if name else None
    if scenario is None:
        count = len(_REGISTRY)
        raise LookupError(
            f"Unknown scenario {name_or_eva_id!r}: not a registered name or eva id "
            f"({count} scenarios registered; see `manage.py list_scenarios`)."
        )
    return scenario


def domain_of(name: str) -> str | None:
    """Domain bucket of a name (text before the first ``__``), None for legacy names."""
    return name.split(DOMAIN_SEPARATOR, 1)[0] if DOMAIN_SEPARATOR in name else None


def domains(names: list[str] | None = None) -> dict[str, list[str]]:
    """Names grouped by domain prefix (sorted domains, registration order inside each)."""
    grouped: dict[str, list[str]] = {}
    for name in list_eval_scenarios() if names is None else names:
        domain = domain_of(name)
        if domain is not None:
            grouped.setdefault(domain, []).append(name)
    return dict(sorted(grouped.items()))


def scenarios_in_domain(domain: str) -> list[str]:
    """Registered names starting with ``<domain>__``, registration order (``--domain``)."""
    prefix = f"{domain}{DOMAIN_SEPARATOR}"
    return [name for name in list_eval_scenarios() if name.startswith(prefix)]


def load_all() -> None:
    """Import every domain module so all decorators run. Idempotent (imports are cached)."""
    for module in DOMAIN_MODULES:
        importlib.import_module(module)


def scenario_group(eva_id: str | None) -> str:
    """``"1.1.3"`` -> ``"1.x"``: the dataset's scenario group; ``"other"`` without a dataset id."""
    head = (eva_id or "").split(".", 1)[0]
    return f"{head}.x" if head.isdigit() else "other"
