"""The admin jobs as arq jobs: registered in ``WorkerSettings`` beside formation, so
``alfred admin …``, ``arq``'s own tooling (``ArqRedis.enqueue_job("admin_stats")``) and
any worker of the deployment run them.

Each wrapper has the composition root build an :class:`AdminContext` (progress hash
keyed by arq's job id), runs the use case of :mod:`services.admin` on it,
records the run in ``job_runs`` (start, end, status, counts), and turns a transient
failure (database, Redis, mem0 down) into an arq ``Retry`` with back-off, like the
formation jobs. Every job is idempotent, so a retry or a re-run after a kill is safe.
Arguments are plain values (strings, ints, bools): they survive any queue's
serialisation.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from arq import Retry, func

from integrations.redis.queue import JobQueue
from jobs.admin.names import (
    ADMIN_CONSOLIDATE,
    ADMIN_EXPORT_USER,
    ADMIN_PURGE_USER,
    ADMIN_RE_EMBED,
    ADMIN_RECONCILE_MEM0,
    ADMIN_RETRY_FORMATION,
    ADMIN_STATS,
)
from jobs.tasks import Ctx, runtime
from jobs.timing import timed
from memory.errors import AlfredError
from runtime.jobs import admin_context
from services.admin.consolidate import Target, consolidate_target
from services.admin.context import AdminContext
from services.admin.export import ExportDocument, export_user
from services.admin.mem0 import reconcile_mem0
from services.admin.purge import purge_user
from services.admin.reembed import DEFAULT_BATCH, re_embed
from services.admin.retry_formation import retry_formation
from services.admin.stats import TOP_PARTITIONS, collect_stats
from services.formation_duties import request_formation
from services.job_config import JobsConfig

T = TypeVar("T")

#: Tries per admin job: enough to ride out a dependency restart with back-off.
ADMIN_MAX_TRIES = 5
#: arq time limits. Re-embedding a large store is long, but resumable.
TIMEOUTS = {
    ADMIN_CONSOLIDATE: 1800.0,
    ADMIN_RE_EMBED: 6 * 3600.0,
    ADMIN_PURGE_USER: 900.0,
    ADMIN_EXPORT_USER: 900.0,
    ADMIN_STATS: 300.0,
    ADMIN_RECONCILE_MEM0: 3600.0,
    ADMIN_RETRY_FORMATION: 300.0,
}


def _error_text(exc: BaseException) -> str:
    """What ``job_runs`` keeps of a failure: our own one-line message, or the type only
    (a driver's message may quote a document, and job records are shown to operators)."""
    return exc.one_line() if isinstance(exc, AlfredError) else type(exc).__name__


def user_key(user_id: str | int) -> str:
    """A Telegram user id as the directory stores it (``"123"``)."""
    return str(user_id).strip()


async def _tracked(
    ctx: Ctx,
    name: str,
    work: Callable[[AdminContext], Awaitable[T]],
    summarize: Callable[[T], dict[str, Any] | None],
) -> T:
    rt = runtime(ctx)
    services = rt.services
    job_id = str(ctx.get("job_id") or f"inline-{uuid.uuid4().hex}")
    redis = ctx.get("redis")
    actx = admin_context(
        services,
        redis=redis,
        job_id=job_id,
        queue=JobQueue(redis) if redis is not None else None,
    )
    queries, progress = actx.queries, actx.progress
    await queries.job_started(name, job_id, services.clock.now())
    try:
        result = await work(actx)
    except asyncio.CancelledError:
        # arq's time limit or a stopping worker; arq runs it again (or records the end)
        with contextlib.suppress(Exception):
            await queries.job_finished(
                name, job_id, services.clock.now(), "cancelled", error="CancelledError"
            )
        raise
    except Exception as exc:
        delay = rt.duties.transient_delay(exc, int(ctx.get("job_try", 1)))
        status = "failed" if delay is None else "retrying"
        with contextlib.suppress(Exception):  # the database may be what failed
            await queries.job_finished(
                name, job_id, services.clock.now(), status, error=_error_text(exc)
            )
            await progress.finish(f"{status}: {type(exc).__name__}")
        if delay is None:
            raise
        raise Retry(defer=delay) from exc
    await queries.job_finished(
        name, job_id, services.clock.now(), "complete", summary=summarize(result)
    )
    return result


def _counts(result: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: result[k] for k in keys if k in result}


async def admin_consolidate(
    ctx: Ctx, kind: str = "all", target_id: str | None = None
) -> dict[str, Any]:
    """Force-consolidate a thread's, a user's, a circle's or every buffer."""
    target = Target(kind, target_id)
    return await _tracked(
        ctx,
        ADMIN_CONSOLIDATE,
        lambda a: consolidate_target(a, target),
        lambda r: _counts(r, "known", "buffers", "consolidated", "absorbed"),
    )


async def admin_re_embed(
    ctx: Ctx, batch_size: int = DEFAULT_BATCH, max_batches: int | None = None
) -> dict[str, Any]:
    """Re-embed facts of another model or size (resumable)."""
    return await _tracked(
        ctx,
        ADMIN_RE_EMBED,
        lambda a: re_embed(a, batch_size=batch_size, max_batches=max_batches),
        lambda r: _counts(r, "model", "re_embedded", "left"),
    )


async def admin_purge_user(ctx: Ctx, user_id: str | int) -> dict[str, Any]:
    """Erase one user entirely (idempotent). ``job_runs`` keeps counts, not the id."""
    uid = user_key(user_id)
    return await _tracked(
        ctx,
        ADMIN_PURGE_USER,
        lambda a: purge_user(a, uid),
        lambda r: {"found": r["found"], "removed": sum(r["removed"].values())},
    )


async def admin_export_user(ctx: Ctx, user_id: str | int) -> ExportDocument | dict[str, Any]:
    """One user's visible memories as versioned JSON (returned as the job's result)."""
    uid = user_key(user_id)

    def summary(result: ExportDocument | dict[str, Any]) -> dict[str, Any]:
        if isinstance(result, ExportDocument):
            return {"found": True, **result.counts()}
        return {"found": False}

    return await _tracked(ctx, ADMIN_EXPORT_USER, lambda a: export_user(a, uid), summary)


async def admin_stats(ctx: Ctx, top: int = TOP_PARTITIONS) -> dict[str, Any]:
    """Counts per collection, partition kind, circle and partition (the ``top`` largest);
    queue; last job runs. Ids only: arq logs this result."""
    job_id = ctx.get("job_id")
    return await _tracked(
        ctx,
        ADMIN_STATS,
        lambda a: collect_stats(a, own_job=str(job_id) if job_id else None, top=top),
        lambda _: None,
    )


async def admin_reconcile_mem0(ctx: Ctx, dry_run: bool = False) -> dict[str, Any]:
    """Mirror facts missing from mem0 and delete orphaned mem0 copies."""
    return await _tracked(
        ctx,
        ADMIN_RECONCILE_MEM0,
        lambda a: reconcile_mem0(a, dry_run=dry_run),
        lambda r: _counts(r, "enabled", "mirrored", "orphans_deleted", "relinked"),
    )


async def admin_retry_formation(ctx: Ctx, thread_id: str | None = None) -> dict[str, Any]:
    """Form again the batches set aside after failing formation (of one thread, or all):
    released and requested through the formation queue like new messages."""
    duties = runtime(ctx).duties
    return await _tracked(
        ctx,
        ADMIN_RETRY_FORMATION,
        lambda a: retry_formation(a, lambda tid: request_formation(duties, tid), thread_id),
        lambda r: _counts(r, "threads", "messages"),
    )


def admin_functions(config: JobsConfig | None = None) -> list[Any]:
    """The admin jobs for ``WorkerSettings.functions`` (``config`` is accepted for
    symmetry with the other registrations; admin limits are their own). Each is timed
    like formation (``alfred_job_seconds{job="admin_…"}``, ``alfred_job_failures``)."""
    jobs: list[tuple[Any, str]] = [
        (admin_consolidate, ADMIN_CONSOLIDATE),
        (admin_re_embed, ADMIN_RE_EMBED),
        (admin_purge_user, ADMIN_PURGE_USER),
        (admin_export_user, ADMIN_EXPORT_USER),
        (admin_stats, ADMIN_STATS),
        (admin_reconcile_mem0, ADMIN_RECONCILE_MEM0),
        (admin_retry_formation, ADMIN_RETRY_FORMATION),
    ]
    return [
        func(timed(name, job), name=name, timeout=TIMEOUTS[name], max_tries=ADMIN_MAX_TRIES)
        for job, name in jobs
    ]
