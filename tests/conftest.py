"""Shared test set-up: a fresh asgiref executor in forked children, how pytest-xdist's workers
share the suite out, and the clean-up of this process's SQLite side files.

Isolation under pytest-xdist (pytest.ini runs the suite on several workers): each worker is its
own process with its own SQLite test database (the name holds the pid; pytest-django adds the
worker id), takes ports from its own block (``tests.services.free_port``) and writes only under
pytest's ``tmp_path`` (per worker). A module whose tests share a module-scoped fixture of this
suite (a live site, a Celery stack, a browser) runs on one worker, which sets it up once.
"""
from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import pytest


def _fresh_asgiref_executor() -> None:
    # A forked live server would otherwise inherit a dead single-thread executor (stack-notes §5).
    from concurrent.futures import ThreadPoolExecutor

    from asgiref.sync import SyncToAsync

    SyncToAsync.single_thread_executor = ThreadPoolExecutor(max_workers=1)


os.register_at_fork(after_in_child=_fresh_asgiref_executor)


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    """True when the test uses a module- or class-scoped fixture defined in this suite."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    for name in info.names_closure:
        for fixturedef in info.name2fixturedefs.get(name, ()):
            if fixturedef.scope in ("module", "class") and fixturedef.func.__module__.startswith("tests."):
                return True
    return False


SLOW_SECONDS = 30.0
"""What a ``slow`` test that gives no ``seconds`` is expected to take while the whole suite runs."""


def _expected_seconds(item: pytest.Item) -> float:
    """``@pytest.mark.slow(seconds=N)``: about how long the test takes in the loaded suite run
    (0 for a test not marked slow). Only the order in which tests are handed out reads it."""
    mark = item.get_closest_marker("slow")
    if mark is None:
        return 0.0
    return float(mark.kwargs.get("seconds", SLOW_SECONDS))


def _unit(item: pytest.Item) -> str:
    """What xdist (``--dist loadgroup``) hands out as one piece: the test's group, else the test."""
    group = item.get_closest_marker("xdist_group")
    if group is None:
        return item.nodeid
    return "@" + str(group.args[0] if group.args else group.kwargs.get("name", "default"))


def _name_groups_in_node_ids(items: list[pytest.Item]) -> None:
    """Append ``@group`` to grouped tests' node ids on an xdist worker, as xdist means to: its own
    hook sets ``item._nodeid``, which pytest 9.2's structured node ids (``item._id``) ignore, so
    without this ``--dist loadgroup`` would scatter a group over the workers."""
    from _pytest.nodeid import NodeId

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for item in items:
        name = _unit(item)
        if name.startswith("@") and not item.nodeid.endswith(name) and hasattr(item, "_id"):
            item._id = NodeId.parse(item.nodeid + name)


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> Generator[None, None, None]:
    """Before the other hooks: group each module that shares a module-scoped fixture (xdist reads
    the groups). After them: the units expected to take longest first (the ``seconds`` of their
    ``slow`` tests), the rest in collection order (pytest-django's database order included).
    xdist hands units out in this order to whichever worker is free, so the minute-long voice,
    browser and Celery tests start at once on different workers instead of forming a tail (a
    group of three 35 s Celery tests handed out in collection order once ran last, alone)."""
    for item in items:
        if not item.get_closest_marker("xdist_group") and _shares_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    yield
    _name_groups_in_node_ids(items)
    expected: dict[str, float] = {}
    for item in items:
        expected[_unit(item)] = expected.get(_unit(item), 0.0) + _expected_seconds(item)
    items.sort(key=lambda item: -expected[_unit(item)])


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:  # noqa: ARG001 - hook signature
    """Remove the WAL side files SQLite leaves next to this process's (already dropped) test DB."""
    try:
        from django.conf import settings

        name = settings.DATABASES["default"].get("TEST", {}).get("NAME")
    except Exception:  # Django never configured (a collection error): nothing was created
        return
    if not name or name == ":memory:":
        return
    database = Path(name)
    for suffix in ("-wal", "-shm"):
        side = database.with_name(database.name + suffix)
        if side.exists() and not database.exists():
            side.unlink()
