"""Running the jobs inside another process: the bot's embedded default, and replays.

* :func:`start_inprocess_worker` — a real arq worker (crons included) as a task of the
  caller's event loop, sharing the caller's services; ``await handle.stop()`` ends it.
  A job interrupted by ``stop()`` is put back in the queue by arq and runs again.
* :func:`drain` — a burst worker: runs every queued job (and the retries they cause)
  to completion, one at a time so a replay is deterministic, and returns
  ``[(job name, status)]``; without Redis it runs the open outbox requests inline.
* :func:`run_single_job` — one queued job (an ``alfred admin`` command nobody else
  runs) through a real arq worker that claims only that job id.
* :func:`run_due_crons` — the cron duties (cold sessions, outbox requeue, recall counts)
  at a given, possibly simulated, time. All are every-minute, idempotent duties, so
  running them at ``now`` is exactly what the cron would do at ``now``. Without a Redis
  handle they do their work inline (no queue needed); with one they queue jobs for
  :func:`drain`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from arq.jobs import Job
from arq.worker import Worker

from integrations.redis.connection import RedisHandle
from integrations.redis.queue import (
    CLOSE_ERRORS,
    COLD_SESSIONS,
    FOLD_RECALLS,
    FORM_THREAD,
    REMINDER_SWEEP,
    REQUEUE_OUTBOX,
    UNREACHABLE_ERRORS,
    JobQueue,
    QueuePool,
)
from jobs.reminder_tasks import sweep as reminder_sweep
from jobs.tasks import startup
from jobs.worker import worker_options
from memory.tasks import await_ignoring_inner_cancel
from runtime.bundle import Services
from runtime.jobs import jobs_runtime, queue_name
from services.formation_duties import (
    Transient,
    cold_sessions,
    fold_recalls,
    process_request,
    requeue_outbox,
)
from services.job_config import JobsConfig

log = logging.getLogger(__name__)


def _pool(redis: RedisHandle, name: str) -> QueuePool:
    # No socket timeout: the worker's polling connection must not time out while idle.
    return QueuePool.connect(redis.url, name, connect_timeout=5.0, timeout=None)


def _ctx(
    services: Services,
    redis: RedisHandle,
    config: JobsConfig | None,
    *,
    recover: bool,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "services": services,
        "redis_handle": redis,
        "jobs_config": config,
        "recover_on_startup": recover,
        **(extra or {}),
    }


#: Seconds between attempts to start the in-process worker again while Redis is down.
RESTART_DELAYS = (0.2, 0.5, 1.0, 2.0)


class InprocessWorker:
    """A running in-process worker that outlives a Redis outage.

    arq's polling loop ends at the first connection error, which would leave the bot
    without a worker until it is restarted. Here the loop is started again (a fresh arq
    worker on a fresh connection pool) until Redis answers; jobs that were running are
    cancelled with it, and what they did not finish is queued again from the outbox by
    the requeue cron (or run again by arq, whose job record survived in Redis).
    """

    def __init__(self, make: Callable[[], Worker]) -> None:
        self._make = make
        self.worker = make()
        self.restarts = 0
        self._stopping = False
        self.task = asyncio.create_task(self._run(), name="alfred-inprocess-worker")

    @property
    def queue_name(self) -> str:
        return self.worker.queue_name

    async def _run(self) -> None:
        failures = 0
        while True:
            try:
                await self.worker.async_run()
                return
            except UNREACHABLE_ERRORS as exc:
                if self._stopping:
                    raise
                delay = RESTART_DELAYS[min(failures, len(RESTART_DELAYS) - 1)]
                failures += 1
                log.warning(
                    "in-process worker lost Redis (%s); starting it again in %.1fs",
                    type(exc).__name__,
                    delay,
                )
            await _discard(self.worker)
            await asyncio.sleep(delay)
            if self._stopping:
                return
            self.worker = self._make()
            self.restarts += 1

    async def stop(self, grace: float = 10.0) -> None:
        """Stop taking jobs, give running ones ``grace`` seconds, then cancel the rest
        (arq puts them back in the queue) and run ``shutdown``."""
        self._stopping = True
        self.worker.allow_pick_jobs = False
        running = [t for t in self.worker.tasks.values() if not t.done()]
        if running:
            await asyncio.wait(running, timeout=grace)
        # Redis may have died under us: arq's close() then cannot reach it, and the
        # worker's task has already ended with the connection error. Stopping is what
        # was asked for, and it happened; the error is logged, not raised.
        for step, awaitable in (("close", self.worker.close()), ("task", self.task)):
            try:
                await await_ignoring_inner_cancel(awaitable)
            except CLOSE_ERRORS as exc:
                log.warning("in-process worker %s on a dead queue: %r", step, exc)


async def _discard(worker: Worker) -> None:
    """Let go of an arq worker whose Redis died: cancel its jobs, close its pool."""
    pool = worker.pool
    # A dead Redis fails close() half-way: its health key stays until it expires.
    with contextlib.suppress(*CLOSE_ERRORS):
        await await_ignoring_inner_cancel(worker.close())
    with contextlib.suppress(*CLOSE_ERRORS):
        if pool is not None:
            await pool.aclose()


async def start_inprocess_worker(
    services: Services,
    redis: RedisHandle,
    *,
    config: JobsConfig | None = None,
    crons: bool = True,
    max_jobs: int = 4,
    poll_delay: float = 0.5,
) -> InprocessWorker:
    """Run the arq worker as a task of this event loop, with ``services`` (not closed by
    the worker) and ``redis`` (the queue's server; not closed either)."""
    name = queue_name(services.settings)

    def make() -> Worker:
        return Worker(
            **worker_options(config, crons=crons),
            redis_pool=_pool(redis, name),
            queue_name=name,
            handle_signals=False,
            max_jobs=max_jobs,
            poll_delay=poll_delay,
            ctx=_ctx(services, redis, config, recover=True),
        )

    return InprocessWorker(make)


async def drain(
    services: Services,
    redis: RedisHandle | None = None,
    *,
    config: JobsConfig | None = None,
    max_seconds: float | None = None,
    poll_delay: float = 0.05,
    max_jobs: int = 1,
    extra_ctx: dict[str, Any] | None = None,
) -> list[tuple[str, str]]:
    """Run every queued job to completion and return ``[(job name, status)]`` in the
    order the jobs first started; status is ``complete``, ``failed``, or arq's state
    (``queued``/``deferred``) for a job still waiting when ``max_seconds`` ran out.

    With ``redis``: a burst arq worker on the queue. Deferred retries keep the drain
    going until they ran. No cron is scheduled (use :func:`run_due_crons`); cron jobs
    already in the queue do run. Do not drain while an in-process worker polls the same
    queue: the two would split the jobs between them.

    Without ``redis`` (a replay with no queue at all): every open outbox request is run
    here, oldest first, with in-process locks; a request whose dependency is down is
    reported ``failed`` and stays open.
    """
    if redis is None:
        return await _drain_inline(services, config)
    name = queue_name(services.settings)
    pool = _pool(redis, name)
    order: dict[str, None] = {}
    for job_id in await pool.zrange(name, 0, -1):
        order[job_id.decode() if isinstance(job_id, bytes) else str(job_id)] = None

    async def seen(ctx: dict[str, Any]) -> None:
        order.setdefault(str(ctx["job_id"]), None)

    worker = Worker(
        **worker_options(config, crons=False),
        redis_pool=pool,
        queue_name=name,
        burst=True,
        handle_signals=False,
        max_jobs=max_jobs,
        poll_delay=poll_delay,
        on_job_start=seen,
        ctx=_ctx(services, redis, config, recover=False, extra=extra_ctx),
    )
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(worker.async_run(), max_seconds)
        return [await _outcome(pool, name, job_id) for job_id in order]
    finally:
        await worker.close()


async def _drain_inline(services: Services, config: JobsConfig | None) -> list[tuple[str, str]]:
    rt = jobs_runtime(services, config=config)
    ran: list[tuple[str, str]] = []
    for request in await rt.outbox.open_requests():
        try:
            await process_request(rt, request.id)
        except Transient:
            ran.append((FORM_THREAD, "failed"))
        else:
            ran.append((FORM_THREAD, "complete"))
    return ran


async def _outcome(pool: QueuePool, name: str, job_id: str) -> tuple[str, str]:
    job = Job(job_id, pool, _queue_name=name)
    result = await job.result_info()
    if result is not None:
        return result.function, "complete" if result.success else "failed"
    info = await job.info()
    return (info.function if info else "?"), (await job.status()).value


@dataclass
class CronRun:
    """One cron duty that ran, and its report."""

    name: str
    report: dict[str, Any] = field(default_factory=dict)


async def run_due_crons(
    services: Services,
    now: datetime | None = None,
    *,
    redis: RedisHandle | None = None,
    config: JobsConfig | None = None,
) -> list[CronRun]:
    """Run the every-minute duties at ``now`` (default: the services' clock).

    Without ``redis``: cold sessions are formed, consolidated and closed here, and due
    outbox requests are run here (with in-process locks: do not run a worker on the
    same database meanwhile). With ``redis``: jobs are queued (run them with
    :func:`drain`) and formation locks are Redis's.
    """
    now = now or services.clock.now()
    queue = JobQueue.from_url(redis.url, queue_name(services.settings)) if redis else None
    rt = jobs_runtime(services, redis=redis.client if redis else None, queue=queue, config=config)
    try:
        cold = await cold_sessions(rt, now)
        requeue = await requeue_outbox(rt, now)
        recalls = await fold_recalls(rt)
        reminders = await reminder_sweep(services, queue) if queue is not None else 0
    finally:
        if queue is not None:
            await queue.close()
    from jobs.calendar_tasks import CALENDAR_SYNC
    from services.calendar import sync_due

    runs = [
        CronRun(COLD_SESSIONS, asdict(cold)),
        CronRun(REQUEUE_OUTBOX, asdict(requeue)),
        CronRun(FOLD_RECALLS, {"facts_updated": recalls}),
        CronRun(REMINDER_SWEEP, {"queued": reminders}),
    ]
    if services.settings.flags().calendar:
        calendar = await sync_due(services.calendar)  # inline: idempotent, leased per user
        runs.append(CronRun(CALENDAR_SYNC, calendar.as_dict()))
    return runs


async def run_single_job(
    services: Services,
    redis: RedisHandle,
    job_id: str,
    *,
    config: JobsConfig | None = None,
    poll: float = 0.2,
) -> None:
    """Run one queued job (and its retries) through a real arq worker, here.

    Returns once the job is complete (or gone). The worker claims only ``job_id``; it
    writes no health key (it is no general worker) and shares ``services``/``redis``
    without closing them. Cancelled mid-job, arq puts the job back in the queue.
    """
    name = queue_name(services.settings)
    pool = _pool(redis, name)
    worker = Worker(
        **worker_options(config, crons=False),
        redis_pool=pool,
        queue_name=name,
        handle_signals=False,
        max_jobs=1,
        # never the shared key: closing must not erase a real worker's health record
        health_check_key=f"{name}:admin-runner:{uuid.uuid4().hex}",
        ctx=_ctx(services, redis, config, recover=False),
    )
    worker.ctx["redis"] = pool  # what arq's own main() sets before startup
    started = False
    try:
        await startup(worker.ctx)
        started = True
        while True:
            job = Job(job_id, pool, _queue_name=name)
            state = await job.status()
            if state.value in ("complete", "not_found"):
                return
            if state.value == "queued":
                await worker.start_jobs([job_id.encode()])
                task = worker.tasks.pop(job_id, None)
                if task is not None:
                    await task
                    me = asyncio.current_task()
                    if me is not None and me.cancelling():
                        # We were cancelled while awaiting the job: the cancellation went
                        # into it, arq caught it and put the job back, and ``await task``
                        # returned normally. Stop here instead of running the job again.
                        raise asyncio.CancelledError
                    continue
            await asyncio.sleep(poll)  # deferred (a retry's back-off), or running elsewhere
    finally:
        if started:
            await worker.close()  # runs shutdown (closes nothing it was given)
        else:
            await pool.aclose()
