"""The formation queue over arq's Redis pool: the one place that knows arq's key layout.

arq is in maintenance mode upstream (DESIGN.md §7), so everything that touches its
internals is here and in :mod:`jobs.worker` / :mod:`jobs.inprocess`; the trigger and
the duties only call :class:`JobQueue`. Swapping the queue means rewriting these.

A formation job's arq id is the outbox request id, so arq itself refuses a second job
for the same request while one is queued, running, or its result is kept.
"""

from __future__ import annotations

from enum import StrEnum
from typing import cast

from arq.connections import ArqRedis
from arq.constants import in_progress_key_prefix, result_key_prefix
from arq.jobs import Job, JobStatus

from jobs.config import FORM_THREAD


class JobState(StrEnum):
    """arq's view of one job id (its own ``JobStatus``, re-exported without arq)."""

    QUEUED = "queued"
    DEFERRED = "deferred"
    IN_PROGRESS = "in_progress"
    COMPLETE = "complete"
    NOT_FOUND = "not_found"

    @property
    def live(self) -> bool:
        """A job that will still run (or is running)."""
        return self in (JobState.QUEUED, JobState.DEFERRED, JobState.IN_PROGRESS)


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
            cls.from_url(url, socket_connect_timeout=connect_timeout, socket_timeout=timeout),
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

    async def queued_count(self) -> int:
        return int(await self.pool.zcard(self.name))

    async def close(self) -> None:
        if self._owns_pool:
            await self.pool.aclose()
