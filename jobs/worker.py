"""The arq worker: ``arq jobs.worker.WorkerSettings``.

arq's CLI reads ``WorkerSettings.redis_settings`` (and every other option) from the
class's own ``__dict__`` right after importing it, before any event loop runs. Alfred's
Redis may be the embedded server, which must be started (or joined) first, and
importing this module (the bot does, for the in-process worker) must not start
anything. So ``WorkerSettings`` is built lazily, on first attribute access, by the
module-level ``__getattr__`` (PEP 562): ``arq jobs.worker.WorkerSettings`` and
``from jobs.worker import WorkerSettings`` both resolve the settings (environment and
``.env``), join or start the embedded Redis when ``REDIS_URL`` is unset, and return a
plain class. :func:`build_worker_settings` does the same for explicit settings.

The embedded server's lease taken here lives as long as the process (released at exit;
a killed process is noticed by the server's supervisor).
"""

from __future__ import annotations

from typing import Any

from arq import cron, func
from arq.connections import RedisSettings

from integrations.redis.queue import (
    COLD_SESSIONS,
    CONSOLIDATE,
    FOLD_RECALLS,
    FORM_THREAD,
    REQUEUE_OUTBOX,
)
from jobs.admin.tasks import admin_functions
from jobs.calendar_tasks import calendar_cron_jobs, calendar_functions
from jobs.reminder_tasks import reminder_cron_jobs, reminder_functions
from jobs.tasks import (
    cold_sessions_job,
    consolidate,
    fold_recalls_job,
    form_thread,
    requeue_outbox_job,
    shutdown,
    startup,
)
from jobs.timing import timed
from memory.errors import ConfigurationError
from runtime.embedded import EmbeddedLease, acquire
from runtime.jobs import queue_name
from runtime.settings import Settings, load_settings
from services.job_config import JobsConfig

#: Seconds a finished job's result is kept: arq refuses a second job with the same id
#: meanwhile (idempotent requests), and ``drain`` reads outcomes from it.
KEEP_RESULT = 3600
#: How often the worker writes its health key (``arq --check``).
HEALTH_CHECK_INTERVAL = 60
#: On SIGTERM/SIGINT, stop taking jobs and give running ones this long before
#: cancelling them (a cancelled job is run again later). Besides a gentler deploy, it
#: avoids an arq race: a plain SIGTERM while a finished job's result is being written
#: makes arq's shutdown raise CancelledError (exit code 1).
JOB_COMPLETION_WAIT = 15

_leases: list[EmbeddedLease] = []


def functions(config: JobsConfig | None = None, *, crons_as_functions: bool = False) -> list[Any]:
    """The registered jobs. With ``crons_as_functions`` the cron duties are plain jobs
    too (a burst drain runs any left in the queue without scheduling new ones)."""
    config = config or JobsConfig()
    registered: list[Any] = [
        func(
            timed(FORM_THREAD, form_thread),
            name=FORM_THREAD,
            timeout=config.form_job_timeout,
            max_tries=config.form_max_tries,
        ),
        func(timed(CONSOLIDATE, consolidate), name=CONSOLIDATE, max_tries=5),
    ]
    registered += admin_functions(config)
    registered += reminder_functions(config, with_sweep=crons_as_functions)
    if crons_as_functions:
        registered += calendar_functions(config)
        registered += [
            func(
                timed(COLD_SESSIONS, cold_sessions_job),
                name=COLD_SESSIONS,
                timeout=config.cron_timeout,
                max_tries=1,
            ),
            func(
                timed(REQUEUE_OUTBOX, requeue_outbox_job),
                name=REQUEUE_OUTBOX,
                timeout=config.cron_timeout,
                max_tries=1,
            ),
            func(
                timed(FOLD_RECALLS, fold_recalls_job),
                name=FOLD_RECALLS,
                timeout=config.cron_timeout,
                max_tries=1,
            ),
        ]
    return registered


def cron_jobs(config: JobsConfig | None = None) -> list[Any]:
    """Every minute: cold sessions at :00, the outbox requeue at :30, recall counts at :50
    (spread the load; calendar and reminders add theirs at :15 and :45)."""
    config = config or JobsConfig()
    return [
        cron(
            timed(COLD_SESSIONS, cold_sessions_job),
            name=COLD_SESSIONS,
            second=0,
            timeout=config.cron_timeout,
        ),
        cron(
            timed(FOLD_RECALLS, fold_recalls_job),
            name=FOLD_RECALLS,
            second=50,
            timeout=config.cron_timeout,
        ),
        cron(
            timed(REQUEUE_OUTBOX, requeue_outbox_job),
            name=REQUEUE_OUTBOX,
            second=30,
            timeout=config.cron_timeout,
        ),
        *calendar_cron_jobs(config),
        *reminder_cron_jobs(config),
    ]


def worker_options(config: JobsConfig | None = None, *, crons: bool = True) -> dict[str, Any]:
    """arq ``Worker`` keyword arguments shared by the CLI, in-process and drain workers."""
    config = config or JobsConfig()
    return {
        "functions": functions(config, crons_as_functions=not crons),
        "cron_jobs": cron_jobs(config) if crons else [],
        "on_startup": startup,
        "on_shutdown": shutdown,
        "job_timeout": config.form_job_timeout,
        "max_tries": config.form_max_tries,
        "keep_result": KEEP_RESULT,
        "health_check_interval": HEALTH_CHECK_INTERVAL,
        "job_completion_wait": JOB_COMPLETION_WAIT,
    }


def redis_settings_for(settings: Settings) -> RedisSettings:
    """arq's connection settings: ``REDIS_URL``, or the embedded server (joined or
    started now; its lease is kept for the life of the process)."""
    if settings.redis_url is not None:
        url = settings.redis_url.get_secret_value()
    else:
        lease = acquire(
            "redis",
            settings.data_dir(),
            port=settings.embedded_redis_port,
            timeout=settings.embedded_start_timeout,
        )
        _leases.append(lease)
        url = lease.url
    try:
        return RedisSettings.from_dsn(url)
    except (RuntimeError, ValueError) as exc:
        raise ConfigurationError(
            f"REDIS_URL is not a valid Redis URL: {exc}",
            hint="use redis://host:port/db or rediss://…, or unset it for the embedded server",
        ) from None


def build_worker_settings(
    settings: Settings | None = None, config: JobsConfig | None = None
) -> type:
    """A ``WorkerSettings`` class for ``settings`` (default: the environment)."""
    settings = settings or load_settings()
    namespace: dict[str, Any] = {
        "__doc__": "arq settings of Alfred's worker (built by jobs.worker).",
        **worker_options(config),
        "redis_settings": redis_settings_for(settings),
        "queue_name": queue_name(settings),
        # arq passes this dict to the worker as ``ctx``: startup reads the settings.
        "ctx": {"settings": settings, "jobs_config": config, "serve_health": True},
    }
    return type("WorkerSettings", (), namespace)


def __getattr__(name: str) -> Any:
    if name == "WorkerSettings":
        settings_class = build_worker_settings()
        globals()[name] = settings_class
        return settings_class
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
