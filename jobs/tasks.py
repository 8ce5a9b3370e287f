"""The arq job functions: thin wrappers that turn :mod:`services.formation_duties` into
arq jobs.

Each worker builds the services once (``startup``) and closes them once (``shutdown``);
a job only looks them up in ``ctx``. Failures become arq retries here, and only here:
a busy thread lock → ``Retry`` after a growing wait; a used-up time budget → ``Retry``
at once (the backlog continues); a dependency that is down → ``Retry`` with
exponential back-off. Anything else fails the job (arq logs it); its
outbox request stays open, so the requeue cron tries again later.

``ctx`` keys a caller may preset (the in-process worker does): ``services``
(:class:`runtime.bundle.Services`, not closed here), ``redis_handle``
(:class:`integrations.redis.connection.RedisHandle`, not closed here), ``settings``,
``jobs_config`` and ``recover_on_startup`` (default true; a drain sets it false).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Any

from arq import Retry

from integrations.redis.connection import RedisHandle
from integrations.redis.queue import JobQueue
from memory.job_ports import LockBusy
from memory.models import Partition, ReflectionScope
from runtime.bundle import Services
from runtime.connections import open_redis
from runtime.container import build_services
from runtime.health import start_health_server
from runtime.jobs import jobs_runtime, queue_name
from runtime.logs import configure_logging
from runtime.metrics import watch_services
from runtime.settings import load_settings
from services.formation_duties import (
    JobsRuntime,
    MoreLeft,
    Transient,
    cold_sessions,
    consolidate_now,
    fold_recalls,
    process_request,
    requeue_outbox,
)
from services.job_config import JobsConfig

log = logging.getLogger(__name__)

Ctx = dict[str, Any]
RUNTIME = "alfred_runtime"
_OWNED_SERVICES = "alfred_owned_services"
_OWNED_REDIS = "alfred_owned_redis"


@dataclass
class WorkerRuntime:
    """What a worker's jobs look up in ``ctx``: the services, and the duties wired on
    them by the composition root."""

    services: Services
    duties: JobsRuntime

    @property
    def config(self) -> JobsConfig:
        return self.duties.config


def runtime(ctx: Ctx) -> WorkerRuntime:
    """The worker's runtime (built by :func:`startup`)."""
    rt = ctx.get(RUNTIME)
    if not isinstance(rt, WorkerRuntime):
        raise RuntimeError("the worker's startup did not run: no services in ctx")
    return rt


_HEALTH_RUNNER = "_alfred_health_runner"


async def startup(ctx: Ctx) -> None:
    """Build the services and the Redis handle (unless given), then recover: requeue
    what is due and release jobs orphaned by a worker that was killed."""
    config = ctx.get("jobs_config") or JobsConfig()
    services: Services | None = ctx.get("services")
    handle: RedisHandle | None = ctx.get("redis_handle")
    settings = services.settings if services is not None else ctx.get("settings")
    settings = settings or load_settings()
    if ctx.get("serve_health"):
        # A worker process of its own (``arq jobs.worker.WorkerSettings``): JSON logs
        # through the redacting filter from the start, whether or not it serves
        # metrics (the bot's in-process worker logs through the bot's set-up).
        configure_logging(settings.log_level, capture=("arq",))
    if services is None:
        services = await build_services(settings)
        ctx[_OWNED_SERVICES] = services
    if handle is None:
        try:
            handle = await open_redis(settings)
        except BaseException:
            if ctx.get(_OWNED_SERVICES) is not None:
                await services.aclose()
            raise
        ctx[_OWNED_REDIS] = handle
    queue = JobQueue(ctx["redis"])
    duties = jobs_runtime(services, redis=handle.client, queue=queue, config=config)
    ctx[RUNTIME] = WorkerRuntime(services, duties)
    watch_services(services, redis=handle.client, queue_name=queue_name(settings))
    if ctx.get("serve_health") and settings.metrics_port:
        # A worker process of its own serves /metrics (the bot's in-process worker
        # shares the bot's server instead).
        redis_client = handle.client
        ctx[_HEALTH_RUNNER] = await start_health_server(
            lambda: services,
            lambda: redis_client,
            host=settings.metrics_listen,
            port=settings.metrics_port,
            token=settings.metrics_token,
        )
    if not ctx.get("recover_on_startup", True):
        return
    try:
        report = await requeue_outbox(runtime(ctx).duties)
    except Exception:
        log.exception("start-up requeue failed; the cron retries every minute")
    else:
        if report.requeued or report.orphans:
            log.info(
                "start-up recovery: %d request(s) queued again, %d orphaned job(s) released",
                len(report.requeued),
                len(report.orphans),
            )


async def shutdown(ctx: Ctx) -> None:
    """Close what :func:`startup` opened (never what the caller passed in)."""
    ctx.pop(RUNTIME, None)
    runner = ctx.pop(_HEALTH_RUNNER, None)
    if runner is not None:
        await runner.cleanup()
    services = ctx.pop(_OWNED_SERVICES, None)
    handle = ctx.pop(_OWNED_REDIS, None)
    try:
        if services is not None:
            await services.aclose()
    finally:
        if handle is not None:
            await handle.close()


async def form_thread(ctx: Ctx, request_id: str) -> dict[str, Any]:
    """Form the thread of outbox request ``request_id`` (see ``process_request``)."""
    rt = runtime(ctx).duties
    job_try = int(ctx.get("job_try", 1))
    job_id = str(ctx.get("job_id") or request_id)
    try:
        # A short, renewed in-progress marker: if this worker is killed, another one
        # takes the job up within ``job_lease`` (its lock has lapsed by then).
        async with JobQueue(ctx["redis"]).running(job_id, rt.config.job_lease):
            outcome = await process_request(rt, request_id, job_id=job_id, job_try=job_try)
    except LockBusy:
        raise Retry(defer=rt.config.lock_wait(job_try)) from None
    except MoreLeft as more:
        log.info("formation request %s continues: %s", request_id, more.outcome.backlog)
        raise Retry() from None  # back in the queue at its old score: runs next
    except Transient as exc:
        raise Retry(defer=exc.defer) from exc
    return outcome.as_dict()


async def cold_sessions_job(ctx: Ctx) -> dict[str, Any]:
    """Cron, every minute: a ``cold`` request (and job) per session gone cold."""
    return asdict(await cold_sessions(runtime(ctx).duties))


async def requeue_outbox_job(ctx: Ctx) -> dict[str, Any]:
    """Cron, every minute: queue stale open requests again; release orphaned jobs."""
    return asdict(await requeue_outbox(runtime(ctx).duties))


async def fold_recalls_job(ctx: Ctx) -> dict[str, Any]:
    """Cron, every minute: add the recall counts the replies logged to their facts."""
    return {"facts_updated": await fold_recalls(runtime(ctx).duties)}


async def consolidate(
    ctx: Ctx,
    scope: str,
    partition_fields: dict[str, Any],
    session_id: str | None = None,
    force: bool = True,
) -> dict[str, Any] | None:
    """Admin: consolidate one (scope, partition[, session]) now.

    ``partition_fields`` is ``Partition.as_fields()`` (plain values survive the queue's
    serialisation and any future queue).
    """
    rt = runtime(ctx).duties
    try:
        return await consolidate_now(
            rt,
            ReflectionScope(scope),
            Partition.from_fields(partition_fields),
            session_id,
            force=force,
        )
    except Exception as exc:
        delay = rt.transient_delay(exc, int(ctx.get("job_try", 1)))
        if delay is None:
            raise
        raise Retry(defer=delay) from exc
