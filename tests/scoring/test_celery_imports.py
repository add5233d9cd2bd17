"""The run orchestration imports in one direction (issue 15, "a circle of five files"): no
import cycle runs through the runner, the executors, the Celery tasks or the Celery app, counting
the imports inside functions too, and a worker's task never loads the runner."""
from __future__ import annotations

import ast
from pathlib import Path

from tests.services import REPO

ROOMS = ("evasite", "scenarios", "scoring", "voice")
WATCHED = ("scoring.runs", "scoring.tasks", "scoring.coordination_tasks", "evasite.celery")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for room in ROOMS for path in (REPO / room).rglob("*.py")
            if "migrations" not in path.parts}


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its body (functions included)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets.add(base)
                targets.update(f"{base}.{alias.name}" for alias in node.names)
        graph[name] = {target for target in targets if target in modules and target != name}
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's components with more than one module (the import cycles)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph[node])
    return seen


def test_no_import_cycle_runs_through_the_run_orchestration() -> None:
    graph = import_graph()
    assert {"scoring.runs.runner", "scoring.tasks", "scoring.runs.executors.celery_queue"} <= set(graph)
    circles = [sorted(component) for component in strongly_connected(graph)
               if any(module.startswith(WATCHED) for module in component)]
    assert circles == []


def test_a_workers_task_loads_neither_the_runner_nor_the_coordinating_side() -> None:
    loaded = reachable(import_graph(), "scoring.tasks")
    assert "scoring.runs.executors.plan" in loaded and "scoring.runs.executors.delivery" in loaded
    assert not loaded & {"scoring.runs.runner", "scoring.runs.executors.celery_queue", "scoring.runs.executors.choice"}
    # The coordination of a site-started run is the runner's own procedure, in a module of its own.
    assert "scoring.runs.runner" in reachable(import_graph(), "scoring.coordination_tasks")


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
