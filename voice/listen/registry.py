"""The live calls of this process, keyed by (run id, scenario directory name), so the listen
endpoint finds the bridge session a browser asks for. Process-local by design: a call runs in one
process and its audio never leaves it (CLI and Celery runs are not reachable from the site)."""
from __future__ import annotations

import threading
from typing import Protocol

from voice.listen.mixer import ListenerMix

LiveKey = tuple[int, str]


class LiveCall(Protocol):
    """What the listen service needs from a call: ``voice.listen.tap.LiveTap`` here, or
    ``voice.listen.remote.RemoteCall`` for a call in another process."""

    def add_listener(self) -> ListenerMix | None: ...

    def remove_listener(self, listener: ListenerMix) -> None: ...


_lock = threading.Lock()
_live: dict[LiveKey, LiveCall] = {}


def register(key: LiveKey, call: LiveCall) -> None:
    """Announce a call; a retried attempt of the same scenario replaces its predecessor."""
    with _lock:
        _live[key] = call


def unregister(key: LiveKey, call: LiveCall) -> None:
    """Forget a call, unless the key already belongs to a newer one."""
    with _lock:
        if _live.get(key) is call:
            del _live[key]


def find(key: LiveKey) -> LiveCall | None:
    with _lock:
        return _live.get(key)


def live_keys() -> list[LiveKey]:
    with _lock:
        return sorted(_live)
