"""Per-thread formation locks: one formation of a thread at a time, across every worker.

The Redis lock is ``SET key token NX PX ttl``; only the owner (who knows the token)
renews or releases it, with a compare-and-act script, so a job that outlived its lock
never deletes the next owner's. A running job renews every third of the TTL; a killed
worker stops renewing, its lock lapses, and another worker takes the thread over.

The token starts with the arq job id, so the requeue cron can tell a live job (its lock
is held under its id) from an orphan (arq still says "in progress", the lock is gone).

:class:`LocalThreadLocks` is the same contract inside one process, for simulations and
replays that run the duties without Redis. Both implement
:class:`memory.job_ports.ThreadLocks`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator

from redis.asyncio import Redis
from redis.exceptions import RedisError

from memory.job_ports import Lease, LockBusy, LockLost
from memory.tasks import cancel_and_wait

log = logging.getLogger(__name__)

_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""


class _Lease:
    def __init__(self) -> None:
        self._lost = False

    @property
    def lost(self) -> bool:
        return self._lost

    def lose(self) -> None:
        self._lost = True

    def check(self) -> None:
        if self._lost:
            raise LockLost("the formation lock was lost; the job will run again")


class RedisThreadLocks:
    """Formation locks in Redis (``SET NX PX``), renewed while held."""

    def __init__(self, client: Redis, prefix: str, ttl: float) -> None:
        self._client = client
        self._prefix = prefix
        self._ttl_ms = max(1, int(ttl * 1000))

    def key(self, thread_id: str) -> str:
        return f"{self._prefix}{thread_id}"

    async def holder(self, thread_id: str) -> str | None:
        value = await self._client.get(self.key(thread_id))
        if value is None:
            return None
        return value.decode() if isinstance(value, bytes) else str(value)

    @contextlib.asynccontextmanager
    async def hold(self, thread_id: str, owner: str) -> AsyncIterator[Lease]:
        key = self.key(thread_id)
        token = f"{owner}:{uuid.uuid4().hex}"
        if not await self._client.set(key, token, nx=True, px=self._ttl_ms):
            raise LockBusy(thread_id)
        lease = _Lease()
        renewer = asyncio.create_task(self._renew(key, token, lease))
        try:
            yield lease
        finally:
            await cancel_and_wait(renewer)
            try:
                await self._client.eval(_RELEASE, 1, key, token)  # type: ignore[misc]
            except (RedisError, OSError) as exc:
                # It lapses by itself within the TTL; nobody else's lock is touched.
                log.warning("formation lock of a thread not released (%s)", type(exc).__name__)

    async def _renew(self, key: str, token: str, lease: _Lease) -> None:
        interval = self._ttl_ms / 3000
        last_ok = time.monotonic()
        while True:
            await asyncio.sleep(interval)
            try:
                renewed = await self._client.eval(  # type: ignore[misc]
                    _RENEW, 1, key, token, str(self._ttl_ms)
                )
            except (RedisError, OSError):
                if time.monotonic() - last_ok > self._ttl_ms / 1000:
                    lease.lose()
                    return
                continue
            if not renewed:
                lease.lose()
                return
            last_ok = time.monotonic()


class LocalThreadLocks:
    """The same contract inside one process (no Redis): for simulations and replays."""

    def __init__(self) -> None:
        self._held: dict[str, str] = {}

    async def holder(self, thread_id: str) -> str | None:
        return self._held.get(thread_id)

    @contextlib.asynccontextmanager
    async def hold(self, thread_id: str, owner: str) -> AsyncIterator[Lease]:
        if thread_id in self._held:
            raise LockBusy(thread_id)
        token = f"{owner}:{uuid.uuid4().hex}"
        self._held[thread_id] = token
        try:
            yield _Lease()
        finally:
            if self._held.get(thread_id) == token:
                del self._held[thread_id]
