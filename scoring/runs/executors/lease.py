"""A worker's claim on one scenario of a run, kept alive in Redis while the attempt runs.

At-least-once delivery means a task can arrive twice: redelivered after a worker vanished, or
while its first delivery is still running. The lease tells those apart: a live lease means a
worker is on it (the copy steps back); an expired one means that worker is gone (the copy moves
its directory aside and runs the scenario again)."""
from __future__ import annotations

import os
import socket
import threading
import uuid

import redis

LEASE_TTL_SECONDS = 15
_PREFIX = "evasite:lease"


def _key(run_id: int, dir_name: str) -> str:
    return f"{_PREFIX}:{run_id}:{dir_name}"


class ScenarioLease:
    """``acquire()`` (atomic), a heartbeat thread while held, ``release()`` only if still ours."""

    def __init__(self, client: redis.Redis, run_id: int, dir_name: str, ttl: int = LEASE_TTL_SECONDS) -> None:
        self.client = client
        self.key = _key(run_id, dir_name)
        self.ttl = ttl
        self.token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def acquire(self) -> bool:
        if not self.client.set(self.key, self.token, nx=True, ex=self.ttl):
            return False
        self._beat = threading.Thread(target=self._heartbeat, name=f"lease {self.key}", daemon=True)
        self._beat.start()
        return True

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                # Re-take it if Redis lost it (a restart without persistence): we are still running.
                if self.client.get(self.key) in (None, self.token.encode()):
                    self.client.set(self.key, self.token, ex=self.ttl)
            except redis.RedisError:
                continue  # the broker is away; keep trying until it is back

    def release(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=5)
        try:
            if self.client.get(self.key) == self.token.encode():
                self.client.delete(self.key)
        except redis.RedisError:
            pass  # it expires on its own


def live_leases(client: redis.Redis, run_id: int) -> int:
    """How many scenarios of the run a worker is on right now."""
    return sum(1 for _ in client.scan_iter(match=f"{_PREFIX}:{run_id}:*", count=500))
