"""Queueing an admin job and waiting for it, the way ``alfred admin`` does.

:class:`AdminClient` enqueues a job under a readable id (``admin-stats-…``), then
waits: it polls arq's state and the job's progress hash, and reports both to a
callback (the CLI draws a progress bar). Nobody has to be running a worker:

* when a worker is alive (its arq health key exists: ``arq jobs.worker.WorkerSettings``
  or the bot's in-process worker), the job is left to it;
* otherwise — or when the job is still waiting after ``start_grace`` seconds (a
  worker that just died still has a fresh health key; a busy one may take long) — the
  client runs *that one job* itself with :func:`jobs.inprocess.run_single_job`: a real
  arq ``Worker`` (same functions, ``startup``/``shutdown``, retries, result) that
  claims only this job id, so the operator's command never picks up someone else's
  formation job.

arq claims a job atomically (its in-progress key), so a worker and the client racing
for the same job run it once.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from integrations.redis.connection import RedisHandle
from integrations.redis.progress import read_progress
from integrations.redis.queue import JobQueue
from jobs.admin.names import COMMANDS
from jobs.inprocess import run_single_job
from memory.admin_ports import Progress
from memory.errors import AlfredError
from memory.job_ports import JobState
from memory.tasks import cancel_and_wait
from runtime.bundle import Services
from runtime.jobs import progress_key, queue_name
from runtime.settings import Settings
from services.job_config import JobsConfig

ProgressCallback = Callable[[Progress | None, JobState], None]
ServicesFactory = Callable[[], Awaitable[Services]]

#: How often the client looks at the job (state and progress): cheap Redis reads.
POLL_SECONDS = 0.2
#: A job still waiting this long with a worker "alive" is run here too.
START_GRACE_SECONDS = 10.0


class UnknownJob(AlfredError):
    """No job with that id (never queued, or its result expired)."""

    def __init__(self, job_id: str) -> None:
        super().__init__(
            f"no admin job {job_id} in the queue (unknown id, or its result expired)",
            hint="results are kept for an hour after a job ends",
        )


class WaitTimeout(AlfredError):
    """The caller's patience ran out; the job itself goes on."""

    def __init__(self, job_id: str, seconds: float) -> None:
        super().__init__(
            f"admin job {job_id} did not finish within {seconds:g}s; it stays queued",
            hint=f"follow it with `alfred admin wait {job_id}`",
        )


@dataclass
class JobOutcome:
    """How a job ended: its arq function, success, and the result (or the error)."""

    job_id: str
    function: str
    success: bool
    result: Any
    ran_here: bool = False

    @property
    def error(self) -> str | None:
        if self.success:
            return None
        exc = self.result
        if isinstance(exc, AlfredError):
            return exc.one_line()
        return f"{type(exc).__name__}: {exc}" if isinstance(exc, BaseException) else str(exc)


def new_job_id(command: str) -> str:
    """A readable, unique id: ``admin-purge-user-3f9c…``."""
    return f"admin-{command}-{uuid.uuid4().hex[:12]}"


class AdminClient:
    """Enqueue admin jobs on a deployment's queue, wait for them, fetch their results."""

    def __init__(
        self,
        settings: Settings,
        redis: RedisHandle,
        *,
        services: ServicesFactory | None = None,
        config: JobsConfig | None = None,
        close_services: bool = True,
    ) -> None:
        """``services`` builds the services when a job must run here (the CLI passes
        ``build_services``); what it built is closed by :meth:`close` unless
        ``close_services`` is false (a caller lending its own services)."""
        self.settings = settings
        self.redis = redis
        self.config = config
        self._factory = services
        self._close_services = close_services
        self._services: Services | None = None
        self.name = queue_name(settings)
        self.queue = JobQueue.from_url(redis.url, self.name)

    async def enqueue(self, command: str, *args: Any) -> str:
        """Queue ``alfred admin <command>`` with ``args``; returns the job id."""
        function = COMMANDS[command]
        job_id = new_job_id(command)
        if not await self.queue.enqueue(function, *args, job_id=job_id):
            raise AlfredError(f"the queue refused job {job_id}")  # ids are unique: rare
        return job_id

    async def worker_alive(self) -> bool:
        """Whether a worker on this queue wrote its health key lately (arq: every 60 s)."""
        return await self.queue.worker_alive()

    async def progress(self, job_id: str) -> Progress | None:
        return await read_progress(self.redis.client, progress_key(self.settings, job_id))

    async def state(self, job_id: str) -> JobState:
        return await self.queue.state(job_id)

    async def _services_for_run(self) -> Services:
        if self._services is None:
            if self._factory is None:
                raise AlfredError("no worker is running and this client cannot run jobs")
            self._services = await self._factory()
        return self._services

    async def wait(
        self,
        job_id: str,
        *,
        on_progress: ProgressCallback | None = None,
        give_up_after: float | None = None,
        run_here: bool = True,
        start_grace: float = START_GRACE_SECONDS,
        poll: float = POLL_SECONDS,
    ) -> JobOutcome:
        """Wait for ``job_id`` to end, running it here when no worker does (see the
        module docstring). Raises :class:`UnknownJob` or :class:`WaitTimeout`."""
        began = time.monotonic()
        runner: asyncio.Task[None] | None = None
        try:
            while True:
                state = await self.state(job_id)
                if on_progress is not None:
                    on_progress(await self.progress(job_id), state)
                if state is JobState.COMPLETE:
                    break
                if state is JobState.NOT_FOUND:
                    raise UnknownJob(job_id)
                waited = time.monotonic() - began
                if (
                    runner is None
                    and run_here
                    and state in (JobState.QUEUED, JobState.DEFERRED)
                    and (waited >= start_grace or not await self.worker_alive())
                ):
                    services = await self._services_for_run()
                    runner = asyncio.create_task(
                        run_single_job(services, self.redis, job_id, config=self.config),
                        name=f"alfred-admin-{job_id}",
                    )
                if runner is not None and runner.done():
                    runner.result()  # a crash of the runner itself (not of the job)
                if give_up_after is not None and waited > give_up_after:
                    raise WaitTimeout(job_id, give_up_after)
                await asyncio.sleep(poll)
        except BaseException:
            # Given up (or interrupted): stop the runner; arq puts its job back.
            if runner is not None and not runner.done():
                await cancel_and_wait(runner)
            raise
        if runner is not None:
            # The job's result is written before the runner has closed its worker: let it
            # finish closing (a crash of the runner itself is re-raised here).
            await runner
        info = await self.queue.result_info(job_id)
        if info is None:
            raise UnknownJob(job_id)
        return JobOutcome(job_id, info.function, info.success, info.result, runner is not None)

    async def forget(self, job_id: str) -> None:
        """Drop a finished job's result and progress from Redis (an export's result holds
        a person's memories: it should not outlive its delivery)."""
        await self.queue.forget(job_id, progress_key(self.settings, job_id))

    async def close(self) -> None:
        await self.queue.close()
        if self._services is not None and self._close_services:
            await self._services.aclose()
        self._services = None
