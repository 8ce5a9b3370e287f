"""The formation queue over arq's Redis pool: the one place that knows arq's key layout.

arq is in maintenance mode upstream (DESIGN.md §7), so everything that touches its
internals is here and in :mod:`jobs.worker` / :mod:`jobs.inprocess`; the trigger and
the duties only call the :class:`memory.job_ports.JobQueue` port this implements.
Swapping the queue means rewriting these.

A formation job's arq id is the outbox request id, so arq itself refuses a second job
for the same request while one is queued, running, or its result is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any, Final, cast

from arq.connections import ArqRedis
from arq.constants import health_check_key_suffix, in_progress_key_prefix, result_key_prefix
from arq.jobs import DeserializationError, Job, JobResult, JobStatus, deserialize_result
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import BusyLoadingError, RedisError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from memory.job_ports import JobState
from memory.reminders import job_id as reminder_job_id
from memory.tasks import cancel_and_wait

log = logging.getLogger(__name__)

#: arq function names: the queue stores these strings, so they are part of the format.
FORM_THREAD: Final = "form_thread"
CONSOLIDATE: Final = "consolidate"
COLD_SESSIONS: Final = "cold_sessions"
REQUEUE_OUTBOX: Final = "requeue_outbox"
FOLD_RECALLS: Final = "fold_recalls"
DELIVER_REMINDER: Final = "deliver_reminder"
REMINDER_SWEEP: Final = "reminder_sweep"

#: Redis failures that mean "down or slow": the duties retry them with back-off.
TRANSIENT_ERRORS: Final = (RedisConnectionError, RedisTimeoutError, BusyLoadingError)
#: The queue cannot be reached: a request stays pending for the requeue cron.
UNREACHABLE_ERRORS: Final = (RedisConnectionError, RedisTimeoutError, OSError)
#: Any failure to enqueue (the trigger never lets one reach a reply).
ENQUEUE_ERRORS: Final = (RedisError, OSError)
#: What closing a client or a worker on a dead server raises: stopping ignores them.
CLOSE_ERRORS: Final = (RedisError, OSError, TimeoutError)


def reconnecting() -> dict[str, Any]:
    """Client options that make a command reconnect and try again (three times, within
    about a second) when its connection broke: after the server restarted (the embedded
    supervisor does that within seconds) the pooled connections are dead, and the first
    command on each would otherwise fail although the server answers again."""
    return {
        "retry": Retry(ExponentialBackoff(cap=0.5, base=0.1), 3),
        "retry_on_error": [RedisConnectionError],
    }


_STATES = {
    JobStatus.queued: JobState.QUEUED,
    JobStatus.deferred: JobState.DEFERRED,
    JobStatus.in_progress: JobState.IN_PROGRESS,
    JobStatus.complete: JobState.COMPLETE,
    JobStatus.not_found: JobState.NOT_FOUND,
}


class QueuePool(ArqRedis):
    """arq's Redis client, closed with ``aclose``: arq's worker still calls the
    ``close()`` that redis-py deprecated (5.0.1), which warns on every shutdown."""

    async def close(self, close_connection_pool: bool | None = None) -> None:
        await self.aclose(close_connection_pool=close_connection_pool)

    @classmethod
    def connect(
        cls,
        url: str,
        queue_name: str,
        *,
        connect_timeout: float = 2.0,
        timeout: float | None = 5.0,
    ) -> QueuePool:
        """A client for ``url`` and ``queue_name`` that connects lazily (never fails here)."""
        pool = cast(
            QueuePool,
            cls.from_url(
                url,
                socket_connect_timeout=connect_timeout,
                socket_timeout=timeout,
                **reconnecting(),
            ),
        )
        pool.default_queue_name = queue_name
        return pool


class JobQueue:
    """Enqueue formation jobs and ask about them."""

    def __init__(self, pool: ArqRedis, *, owns_pool: bool = False) -> None:
        self.pool = pool
        self._owns_pool = owns_pool

    @classmethod
    def from_url(
        cls, url: str, queue_name: str, *, connect_timeout: float = 2.0, timeout: float = 5.0
    ) -> JobQueue:
        """A queue on ``url`` that connects lazily: building it never fails, so a bot can
        start (and journal messages) while Redis is down; enqueueing then raises."""
        pool = QueuePool.connect(url, queue_name, connect_timeout=connect_timeout, timeout=timeout)
        return cls(pool, owns_pool=True)

    @property
    def name(self) -> str:
        return self.pool.default_queue_name

    async def enqueue_form(self, request_id: str, *, defer: float | None = None) -> bool:
        """Queue ``form_thread(request_id)``; False when a job with that id already exists
        (queued, running, or finished and its result still kept)."""
        job = await self.pool.enqueue_job(
            FORM_THREAD, request_id, _job_id=request_id, _defer_by=defer
        )
        return job is not None

    async def enqueue(self, function: str, *args: object, job_id: str | None = None) -> bool:
        """Queue any registered job (admin jobs such as ``consolidate``)."""
        job = await self.pool.enqueue_job(function, *args, _job_id=job_id)
        return job is not None

    async def schedule_reminder(
        self, reminder_id: str, occurrence: datetime, *, now: bool = False
    ) -> bool:
        """Queue ``deliver_reminder`` for one occurrence, deferred until it is due (``now``:
        at once, the sweep's requeue); its id names the occurrence, so a second request is
        refused while the first waits. A finished job of that id (the reminder is still
        due: it failed) is replaced. True when a job was queued."""
        job_id = reminder_job_id(reminder_id, occurrence)
        args = (DELIVER_REMINDER, reminder_id, occurrence.isoformat())
        defer = None if now else occurrence
        job = await self.pool.enqueue_job(*args, _job_id=job_id, _defer_until=defer)
        if job is None and await self.state(job_id) is JobState.COMPLETE:
            await self.forget_result(job_id)
            job = await self.pool.enqueue_job(*args, _job_id=job_id, _defer_until=defer)
        return job is not None

    async def state(self, job_id: str) -> JobState:
        status = await Job(job_id, self.pool, _queue_name=self.name).status()
        return _STATES[status]

    async def forget_result(self, job_id: str) -> None:
        """Drop a finished job's kept result so the same id can be queued again (the
        outbox says the request is still open: the result was a failure)."""
        await self.pool.delete(result_key_prefix + job_id)

    async def in_progress_for(self, job_id: str) -> bool:
        return bool(await self.pool.exists(in_progress_key_prefix + job_id))

    async def release_orphan(self, job_id: str) -> bool:
        """Clear the in-progress marker of a job whose worker died, so any worker runs it
        again now instead of after arq's in-progress timeout (job timeout + 10 s)."""
        return bool(await self.pool.delete(in_progress_key_prefix + job_id))

    @contextlib.asynccontextmanager
    async def running(self, job_id: str, lease: float) -> AsyncIterator[None]:
        """While the block runs, keep arq's in-progress marker of ``job_id`` alive for
        ``lease`` seconds at a time (renewed every quarter of it).

        arq gives the marker the longest job timeout plus 10 s (15 minutes for formation),
        and only the worker that set it deletes it: a job whose worker was killed would
        wait that long before any other worker runs it. Renewed here, the marker of a dead
        worker's job lapses within ``lease`` and arq's polling hands the job (still in the
        queue at its old score) to any live worker. ``PEXPIRE`` never creates the marker,
        so a renewal after arq finished the job (and deleted it) does nothing."""
        key = in_progress_key_prefix + job_id
        lease_ms = max(1, int(lease * 1000))

        async def renew() -> None:
            while True:
                try:
                    await self.pool.pexpire(key, lease_ms)
                except (RedisError, OSError) as exc:
                    # The marker keeps its last lifetime; the next renewal tries again.
                    log.debug("in-progress marker of %s not renewed (%s)", job_id, exc)
                await asyncio.sleep(lease / 4)

        renewer = asyncio.create_task(renew(), name=f"alfred-in-progress-{job_id}")
        try:
            yield
        finally:
            await cancel_and_wait(renewer)

    async def queued_count(self) -> int:
        return int(await self.pool.zcard(self.name))

    async def worker_alive(self) -> bool:
        """Whether a worker on this queue wrote its health key lately (arq: every 60 s)."""
        return bool(await self.pool.exists(self.name + health_check_key_suffix))

    async def queue_stats(self, own_job: str | None) -> dict[str, Any]:
        """Depth (queued, deferred and running jobs, not counting ``own_job``: the stats job
        itself stays in arq's queue while it runs) and whether a worker is alive."""
        depth = int(await self.pool.zcard(self.name))
        if own_job is not None and await self.pool.zscore(self.name, own_job) is not None:
            depth -= 1
        return {"name": self.name, "depth": depth, "worker_alive": await self.worker_alive()}

    async def result_info(self, job_id: str) -> JobResult | None:
        """A finished job's kept result (function, success, result), or None."""
        return await Job(job_id, self.pool, _queue_name=self.name).result_info()

    async def forget(self, job_id: str, *keys: str) -> None:
        """Drop a job's kept result and any ``keys`` of its own (its progress hash)."""
        await self.pool.delete(result_key_prefix + job_id, *keys)

    async def close(self) -> None:
        if self._owns_pool:
            await self.pool.aclose()


async def drop_results_naming(client: Redis, ids: set[str]) -> int:
    """Delete the kept results of finished jobs whose arguments name one of ``ids``: an
    ``export-user`` result holds that person's memories, text included, for arq's
    keep-result time, and an erased person's words must not wait there."""
    dropped = 0
    async for key in client.scan_iter(match=result_key_prefix + "*", count=500):
        raw = await client.get(key)
        if raw is None:
            continue
        try:
            info = deserialize_result(raw)
        except DeserializationError:
            continue
        if any(str(arg) in ids for arg in (*info.args, *info.kwargs.values())):
            dropped += int(await client.delete(key))
    return dropped
