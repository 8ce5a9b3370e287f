"""Wiring the background jobs: the composition root's part for the worker, the trigger,
admin jobs and retention.

The use cases (:mod:`services.formation_duties`, :mod:`services.trigger`,
:mod:`services.admin`, :mod:`services.retention`) only know ports; this module hands
them the adapters the composition root built (the outbox, the admin queries), the Redis
locks or in-process ones, the queue, the metrics (:class:`runtime.metrics.ProcessMetrics`
observes formations) and the drivers' transient errors.
It also names a deployment's Redis keys, which depend on the settings.
"""

from __future__ import annotations

from redis.asyncio import Redis

from integrations.mongo.errors import TRANSIENT_ERRORS as DATABASE_ERRORS
from integrations.mongo.lists import MongoListStore
from integrations.redis.locks import LocalThreadLocks, RedisThreadLocks
from integrations.redis.progress import RedisProgress
from integrations.redis.queue import ENQUEUE_ERRORS, UNREACHABLE_ERRORS
from integrations.redis.queue import TRANSIENT_ERRORS as QUEUE_ERRORS
from memory.admin_ports import Mem0Maintenance, QueueStats
from memory.job_ports import JobErrors, JobQueue, ThreadLocks
from runtime.bundle import Services
from runtime.erasure import ErasureFiles
from runtime.metrics import ProcessMetrics
from runtime.settings import Settings
from services.admin.context import AdminContext
from services.admin.progress import ProgressReporter
from services.calendar.reply import CalendarForPurge
from services.formation_duties import JobsRuntime
from services.job_config import JobsConfig
from services.retention import Retention
from services.trigger import FormationTrigger

#: What the duties retry, and what tells them the queue is down: the domain's own
#: failures plus those of the database and Redis drivers.
JOB_ERRORS = JobErrors(
    transient=(*JobErrors().transient, *DATABASE_ERRORS, *QUEUE_ERRORS),
    queue_down=UNREACHABLE_ERRORS,
    queue_failed=ENQUEUE_ERRORS,
)


# --- Redis names of a deployment -------------------------------------------------------


def namespace(settings: Settings) -> str:
    """Redis key prefix of one deployment: its database name, so that two Alfreds (or
    two test databases) sharing one Redis never share a queue or a lock."""
    return f"alfred:{settings.mongodb_database}"


def queue_name(settings: Settings) -> str:
    """The arq queue of formation and admin jobs."""
    return f"{namespace(settings)}:queue"


def lock_prefix(settings: Settings) -> str:
    """Per-thread formation locks live under this prefix."""
    return f"{namespace(settings)}:formation-lock:"


def progress_key(settings: Settings, job_id: str) -> str:
    """The progress hash of one admin job (named after the deployment, like its queue)."""
    return f"{namespace(settings)}:admin-progress:{job_id}"


# --- formation -------------------------------------------------------------------------


def jobs_runtime(
    services: Services,
    *,
    redis: Redis | None = None,
    queue: JobQueue | None = None,
    config: JobsConfig | None = None,
) -> JobsRuntime:
    """The duties' ports: Redis locks when a Redis client is given, in-process locks
    otherwise; without a queue the duties do their work inline."""
    config = config or JobsConfig()
    locks: ThreadLocks
    if redis is not None:
        locks = RedisThreadLocks(redis, lock_prefix(services.settings), config.lock_ttl)
    else:
        locks = LocalThreadLocks()
    return JobsRuntime(
        formation=services.formation,
        consolidation=services.consolidation,
        directory=services.directory,
        clock=services.clock,
        outbox=services.outbox,
        locks=locks,
        config=config,
        queue=queue,
        observer=ProcessMetrics(),
        errors=JOB_ERRORS,
        quiet=services.journal,
        recalls=services.recalls,
    )


def formation_trigger(services: Services, queue: JobQueue | None) -> FormationTrigger:
    """What the bot calls after journaling a message (``queue`` None: no Redis at all)."""
    return FormationTrigger(services.directory, services.outbox, services.clock, queue, JOB_ERRORS)


# --- retention and admin ---------------------------------------------------------------


def retention(services: Services) -> Retention:
    """The retention duties with the configured periods."""
    settings = services.settings
    return Retention(services, settings.circle_retention_days, settings.message_retention_days)


def mem0_maintenance(services: Services) -> Mem0Maintenance | None:
    """The mem0 copy for the operator, or None when mem0 is off."""
    if services.semantic is None:
        return None
    from integrations.mem0.admin import Mem0Maintenance as Mem0Admin  # mem0 loads when on

    return Mem0Admin(services.semantic, services.facts, services.semantic_metrics)


def admin_context(
    services: Services,
    *,
    redis: Redis | None = None,
    job_id: str | None = None,
    queue: QueueStats | None = None,
) -> AdminContext:
    """One admin job's context; progress goes to Redis when a client and job id are given
    (kept in memory otherwise)."""
    sink = None
    if redis is not None and job_id is not None:
        sink = RedisProgress(redis, progress_key(services.settings, job_id))
    return AdminContext(
        stores=services,
        queries=services.admin_queries,
        progress=ProgressReporter(sink),
        mem0=mem0_maintenance(services),
        calendar=CalendarForPurge(services.calendar),
        queue=queue,
        queue_name=queue_name(services.settings),
        residue=ErasureFiles(services.settings.data_dir() / "spool", lambda: redis, services.mongo),
        lists=MongoListStore(services.mongo.db),
    )
