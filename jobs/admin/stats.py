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

from arq.constants import health_check_key_suffix
from redis.asyncio import Redis

from jobs.admin.common import AdminContext
from jobs.config import queue_name

#: Partitions listed by ``stats`` (the largest first); the rest are only counted.
TOP_PARTITIONS = 20


async def queue_stats(redis: Redis | None, name: str, own_job: str | None) -> dict[str, Any]:
    """Depth (queued, deferred and running jobs, not counting ``own_job``: the stats job
    itself stays in arq's queue while it runs) and whether a worker wrote its health key."""
    if redis is None:
        return {"name": name, "depth": None, "worker_alive": None}
    depth = int(await redis.zcard(name))
    if own_job is not None and await redis.zscore(name, own_job) is not None:
        depth -= 1
    return {
        "name": name,
        "depth": depth,
        "worker_alive": bool(await redis.exists(name + health_check_key_suffix)),
    }


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
    ctx: AdminContext,
    redis: Redis | None = None,
    *,
    own_job: str | None = None,
    top: int = TOP_PARTITIONS,
) -> dict[str, Any]:
    """Every figure ``alfred admin stats`` prints (``redis``: the queue's, for its depth;
    ``top``: how many partitions to list)."""
    s = ctx.services
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
    queue = await queue_stats(redis, queue_name(s.settings), own_job)
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
            "job_runs": runs,
            "mem0": "on" if s.semantic is not None else "off",
        }
    )
    return report
