"""The background side of a running bot: the formation trigger and, by default, the
arq worker in this process.

With the embedded defaults the worker runs inside the bot (one command, nothing else to
start). ``RUN_WORKER=external`` leaves the queue to ``arq jobs.worker.WorkerSettings``
processes. If Redis cannot be reached at start-up the bot still runs: formation
requests are written to the MongoDB outbox and formed once a worker can reach them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable

from integrations.redis.connection import RedisHandle
from integrations.redis.queue import CLOSE_ERRORS, JobQueue
from jobs.config import queue_name
from jobs.inprocess import InprocessWorker, start_inprocess_worker
from memory.errors import AlfredError
from runtime.bundle import Services
from runtime.connections import open_redis
from runtime.jobs import formation_trigger
from runtime.settings import Settings
from services.trigger import FormationTrigger

log = logging.getLogger(__name__)


class Background:
    """What the bot holds of the job system."""

    def __init__(
        self,
        trigger: FormationTrigger,
        queue: JobQueue | None,
        redis: RedisHandle | None,
        worker: InprocessWorker | None,
    ) -> None:
        self.trigger = trigger
        self.queue = queue
        self.redis = redis
        self.worker = worker

    async def after_message(self, thread_id: str) -> None:
        await self.trigger.after_message(thread_id)

    async def aclose(self) -> None:
        """Stop the worker, close the queue and Redis. Each step runs even if Redis died
        and an earlier one failed, so the embedded server's lease is always let go."""
        if self.worker is not None:
            await _quietly("stopping the in-process worker", self.worker.stop())
        if self.queue is not None:
            await _quietly("closing the job queue", self.queue.close())
        if self.redis is not None:
            await _quietly("closing Redis", self.redis.close())


async def _quietly(what: str, step: Awaitable[object]) -> None:
    """Run a shutdown step; a dead Redis makes it fail, which must not stop the bot's
    shutdown (nor raise out of it): logged and passed over."""
    try:
        await step
    except CLOSE_ERRORS as exc:
        log.warning("%s failed, Redis is unreachable: %r", what, exc)


async def start_background(services: Services, settings: Settings) -> Background:
    try:
        redis = await open_redis(settings)
    except AlfredError as exc:
        log.warning(
            "job queue unavailable (%s): formation requests wait in the outbox", exc.one_line()
        )
        return Background(formation_trigger(services, None), None, None, None)
    queue = JobQueue.from_url(redis.url, queue_name(services.settings))
    worker = None
    if settings.run_worker != "external":
        worker = await start_inprocess_worker(services, redis)
    return Background(formation_trigger(services, queue), queue, redis, worker)
