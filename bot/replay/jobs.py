"""Background jobs for the replay: the production trigger, queue and worker, on demand.

The replay's clock is simulated, so nothing runs by itself: messages request formations
through the real trigger (outbox, then the arq queue on the embedded Redis), and
``{"jobs": "drain"}`` runs the cron duties due at the simulated time and then every
queued job to completion with a burst arq worker.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from redis.asyncio import Redis

from integrations.redis.connection import RedisHandle
from integrations.redis.queue import JobQueue
from jobs.config import queue_name
from jobs.inprocess import drain, run_due_crons
from runtime.bundle import Services
from runtime.connections import open_redis
from runtime.jobs import formation_trigger


class ReplayJobs:
    """The trigger after each message; duties and queued jobs when drained."""

    def __init__(self, services: Services, redis: RedisHandle) -> None:
        self.s = services
        self.redis = redis
        self.queue = JobQueue.from_url(redis.url, queue_name(services.settings))
        self.trigger = formation_trigger(services, self.queue)
        #: Preset in each drain's worker context (the replay's reminder sender).
        self.extra_ctx: dict[str, Any] = {}

    async def after_message(self, thread_id: str) -> None:
        await self.trigger.after_message(thread_id)

    async def drain(self, now: datetime) -> list[tuple[str, str]]:
        await run_due_crons(self.s, now, redis=self.redis)
        return await drain(self.s, self.redis, extra_ctx=self.extra_ctx)

    def redis_client(self) -> Redis:
        return self.redis.client

    async def aclose(self) -> None:
        await self.queue.close()
        await self.redis.close()


async def open_replay_jobs(services: Services) -> ReplayJobs:
    return ReplayJobs(services, await open_redis(services.settings))
