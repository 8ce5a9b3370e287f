"""``stats``: what the database holds and how the queue is doing — counts only.

Counts per collection, per partition kind (circle-level / member / DM, DESIGN.md §3),
per circle and per partition (the ``top`` largest, with the number of partitions); the
fact vectors still to re-embed; the queue's depth and whether a worker is alive; and
the last run of every admin job (``job_runs``). No content and no names of people —
ids only, not even group titles (people choose them, and they often name people): the
result is kept by the queue and arq logs it at INFO.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from services.admin.context import AdminContext

#: Partitions listed by ``stats`` (the largest first); the rest are only counted.
TOP_PARTITIONS = 20


async def queue_stats(ctx: AdminContext, own_job: str | None) -> dict[str, Any]:
    """Depth (queued, deferred and running jobs, not counting ``own_job``: the stats job
    itself stays in the queue while it runs) and whether a worker is alive; unknown
    without a queue."""
    if ctx.queue is None:
        return {"name": ctx.queue_name, "depth": None, "worker_alive": None}
    return await ctx.queue.queue_stats(own_job)


def _plain(value: Any) -> Any:
    """Dates as ISO strings, so the result is JSON as it stands."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


async def collect_stats(
    ctx: AdminContext, *, own_job: str | None = None, top: int = TOP_PARTITIONS
) -> dict[str, Any]:
    """Every figure ``alfred admin stats`` prints (the queue's depth from ``ctx.queue``;
    ``top``: how many partitions to list)."""
    s = ctx.stores
    q = ctx.queries
    steps = 6
    await ctx.progress.phase_start("counting", steps)
    collections = await q.collection_counts()
    await ctx.progress.advance()
    facts = await q.fact_counts(s.embedder.model_name, s.embedder.dimensions)
    await ctx.progress.advance()
    kinds = await q.partition_kind_counts()
    await ctx.progress.advance()
    circles = await q.circle_counts()
    await ctx.progress.advance()
    partitions = await q.partition_counts(top)
    await ctx.progress.advance()
    runs = await q.job_runs()
    set_aside = await s.journal.set_aside_counts()
    queue = await queue_stats(ctx, own_job)
    await ctx.progress.finish()
    report: dict[str, Any] = _plain(
        {
            "collections": collections,
            "facts": {
                **facts,
                "embedding_model": s.embedder.model_name,
                "embedding_dims": s.embedder.dimensions,
            },
            "by_partition_kind": kinds,
            "by_circle": circles,
            "by_partition": partitions,
            "queue": queue,
            "formation_set_aside": {
                "messages": sum(set_aside.values()),
                "threads": len(set_aside),
                "by_thread": dict(sorted(set_aside.items(), key=lambda kv: -kv[1])[:top]),
            },
            "job_runs": runs,
            "mem0": "on" if ctx.mem0 is not None else "off",
        }
    )
    return report
