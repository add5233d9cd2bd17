"""A process's claim on one scenario of a run, kept alive in Redis while its attempts run.

At-least-once delivery means a scenario can be asked for twice: a task redelivered after a
worker vanished, the coordinator's new dispatch of a scenario whose lease lapsed, or a local
resume beside live workers. The lease tells those apart: a live lease means someone is on it
(the other copy steps back or waits); a lapsed one means its holder is gone (the next holder
moves the directory aside and runs the scenario again).

A holder that cannot renew its lease for a whole ``ttl`` (Redis away, the process starved) must
assume someone else has taken over, so it is told (``on_lost``) just before the key can lapse."""
from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable

import redis
from django.conf import settings

LEASE_TTL_SECONDS = 15
_PREFIX = "evasite:lease"

# Renew our lease, or take it back if Redis lost it (a restart without persistence); 0 when
# another holder has it. Atomic, so two processes never both believe they hold one key.
_RENEW = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  return 1
elseif not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  return 1
end
return 0
"""
_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


def redis_client() -> redis.Redis:
    """A client of the broker's Redis, with timeouts so a lost broker never hangs a caller."""
    return redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=10, socket_connect_timeout=5)


def lease_key(run_id: int, dir_name: str) -> str:
    return f"{_PREFIX}:{run_id}:{dir_name}"


class ScenarioLease:
    """``acquire()`` (atomic), a heartbeat thread while held, ``release()`` only if still ours."""

    def __init__(self, client: redis.Redis, run_id: int, dir_name: str, ttl: int = LEASE_TTL_SECONDS) -> None:
        self.client = client
        self.key = lease_key(run_id, dir_name)
        self.ttl = ttl
        self.token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lost = threading.Event()
        self.on_lost: Callable[[], None] | None = None
        """Called once, from the heartbeat thread, when the lease is lost."""
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def acquire(self) -> bool:
        if not self.client.set(self.key, self.token, nx=True, ex=self.ttl):
            return False
        self._beat = threading.Thread(target=self._heartbeat, name=f"lease {self.key}", daemon=True)
        self._beat.start()
        return True

    def _heartbeat(self) -> None:
        renewed = time.monotonic()  # when the last renewal was sent: Redis's expiry is later
        while not self._stop.wait(self.ttl / 3):
            try:
                if self.client.eval(_RENEW, 1, self.key, self.token, self.ttl):
                    renewed = time.monotonic()
                    continue
            except redis.RedisError:
                if time.monotonic() - renewed < self.ttl - self.ttl / 3:
                    continue  # the broker is away; the key outlives this for now
            self._lose()  # someone else holds it, or it may lapse before our next try
            return

    def _lose(self) -> None:
        self.lost.set()
        if self.on_lost is not None:
            self.on_lost()

    def release(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=5)
        if self.lost.is_set():
            return  # not ours any more
        try:
            self.client.eval(_RELEASE, 1, self.key, self.token)
        except redis.RedisError:
            pass  # it expires on its own


class RunLeases:
    """The leases of one run's scenarios: handed out per scenario, and looked up in batches."""

    def __init__(self, client: redis.Redis, run_id: int) -> None:
        self.client = client
        self.run_id = run_id

    def lease(self, dir_name: str) -> ScenarioLease:
        return ScenarioLease(self.client, self.run_id, dir_name)

    def held(self, dir_names: Iterable[str]) -> set[str]:
        """Which of ``dir_names`` someone holds now (one round trip; raises RedisError)."""
        names = list(dir_names)
        if not names:
            return set()
        with self.client.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.exists(lease_key(self.run_id, name))
            return {name for name, exists in zip(names, pipe.execute()) if exists}

    def any_held(self) -> bool:
        """Whether any scenario of the run is held (a scan of the keyspace: a last check only)."""
        return next(iter(self.client.scan_iter(match=f"{_PREFIX}:{self.run_id}:*", count=1000)), None) is not None
