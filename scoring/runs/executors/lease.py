"""A process's claim on one scenario of a run, kept alive in Redis while its attempts run.

At-least-once delivery means a scenario can be asked for twice: a task redelivered after a
worker vanished, the coordinator's new dispatch of a scenario whose lease lapsed, or a local
resume beside live workers. The lease tells those apart: a live lease means someone is on it
(the other copy steps back or waits); a lapsed one means its holder is gone (the next holder
moves the directory aside and runs the scenario again).

Taking a lease also enrols the scenario in its run's set of claimed scenarios, atomically, and
releasing it leaves that set: so the coordinator finds every scenario someone has claimed (one
read of the set), and one whose member has no lease left lost its holder without a word.

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

CLAIMED_TTL_SECONDS = 7 * 24 * 3600

# Each script is atomic, so two processes never both believe they hold one key, and the claimed
# set never names a scenario whose lease was taken without it. KEYS: lease, claimed set;
# ARGV: token, ttl, directory name, the set's ttl.
_ACQUIRE = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then
  redis.call('SADD', KEYS[2], ARGV[3])
  redis.call('EXPIRE', KEYS[2], ARGV[4])
  return 1
end
return 0
"""
# Renew our lease, or take it back if Redis lost it (a restart without persistence); 0 when
# another holder has it.
_RENEW = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  return 1
elseif not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  redis.call('SADD', KEYS[2], ARGV[3])
  return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[2], ARGV[3])
end
return 0
"""
# The coordinator forgets a claimed scenario only while nobody holds it (1), never a new holder's.
_FORGET_LAPSED = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[2], ARGV[1])
  return 1
end
return 0
"""


def redis_client() -> redis.Redis:
    """A client of the broker's Redis, with timeouts so a lost broker never hangs a caller."""
    return redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=10, socket_connect_timeout=5)


def lease_key(run_id: int, dir_name: str) -> str:
    return f"{_PREFIX}:{run_id}:{dir_name}"


def claimed_key(run_id: int) -> str:
    return f"evasite:claimed:{run_id}"


class ScenarioLease:
    """``acquire()`` (atomic), a heartbeat thread while held, ``release()`` only if still ours."""

    def __init__(self, client: redis.Redis, run_id: int, dir_name: str, ttl: int = LEASE_TTL_SECONDS) -> None:
        self.client = client
        self.key = lease_key(run_id, dir_name)
        self.claimed = claimed_key(run_id)
        self.dir_name = dir_name
        self.ttl = ttl
        self.token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lost = threading.Event()
        self.on_lost: Callable[[], None] | None = None
        """Called once, from the thread that finds the lease lost (the heartbeat, or ``confirm``)."""
        self._lost_lock = threading.Lock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def acquire(self, *, within: float = 0.0) -> bool:
        """Take the lease (False: someone holds it); Redis errors are retried for ``within`` s."""
        deadline = time.monotonic() + within
        while True:
            try:
                taken = self._script(_ACQUIRE, CLAIMED_TTL_SECONDS)
                break
            except redis.RedisError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(1.0)
        if not taken:
            return False
        self._beat = threading.Thread(target=self._heartbeat, name=f"lease {self.key}", daemon=True)
        self._beat.start()
        return True

    def _heartbeat(self) -> None:
        renewed = time.monotonic()  # when the last renewal was sent: Redis's expiry is later
        while not self._stop.wait(self.ttl / 3):
            try:
                if self._script(_RENEW):
                    renewed = time.monotonic()
                    continue
            except redis.RedisError:
                if time.monotonic() - renewed < self.ttl - self.ttl / 3:
                    continue  # the broker is away; the key outlives this for now
            self._lose()  # someone else holds it, or it may lapse before our next try
            return

    def confirm(self) -> bool:
        """Whether the lease is still ours right now (checked before the result is recorded)."""
        if self.lost.is_set():
            return False
        try:
            ours = self.client.get(self.key) == self.token.encode()
        except redis.RedisError:
            return True  # unknown: the heartbeat decides, as for the rest of the attempt
        if not ours:
            self._stop.set()
            self._lose()
        return ours

    def _lose(self) -> None:
        with self._lost_lock:
            if self.lost.is_set():
                return
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
            self._script(_RELEASE)
        except redis.RedisError:
            pass  # it expires on its own; the coordinator forgets the claim

    def _script(self, script: str, *extra: object) -> int:
        return int(self.client.eval(script, 2, self.key, self.claimed, self.token, self.ttl, self.dir_name, *extra))


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

    def claimed(self) -> set[str]:
        """Every scenario of the run someone took a lease on and has not released (its holder
        may be gone: ``held`` tells)."""
        return {member.decode() for member in self.client.smembers(claimed_key(self.run_id))}

    def forget_lapsed(self, dir_name: str) -> bool:
        """Drop ``dir_name``'s claim if nobody holds its lease; False when someone does (again)."""
        return bool(self.client.eval(_FORGET_LAPSED, 2, lease_key(self.run_id, dir_name), claimed_key(self.run_id),
                                     dir_name))
