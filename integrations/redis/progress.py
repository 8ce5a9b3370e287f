"""Admin job progress in Redis: one hash per job id that the CLI polls.

The hash (``{namespace}:admin-progress:{job_id}``, named by the composition root) holds
``done``, ``total`` (0 when unknown), ``phase`` and ``updated_at``. It expires a day
after its last write, so finished jobs leave nothing behind for long.
"""

from __future__ import annotations

import time
from typing import Any

from redis.asyncio import Redis

from memory.admin_ports import Progress

#: Seconds a progress hash outlives its last update.
PROGRESS_TTL = 24 * 3600


class RedisProgress:
    """Writes one job's progress hash (implements :class:`memory.admin_ports.ProgressSink`)."""

    def __init__(self, redis: Redis, key: str) -> None:
        self.redis = redis
        self.key = key

    async def write(self, done: int, total: int, phase: str) -> None:
        mapping = {"done": done, "total": total, "phase": phase, "updated_at": time.time()}
        await self.redis.hset(self.key, mapping=mapping)  # type: ignore[misc]
        await self.redis.expire(self.key, PROGRESS_TTL)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def read_progress(redis: Redis, key: str) -> Progress | None:
    """The job's progress, or None before it wrote any (or after it expired)."""
    raw: dict[Any, Any] = await redis.hgetall(key)  # type: ignore[misc]
    if not raw:
        return None
    fields = {_text(k): _text(v) for k, v in raw.items()}
    try:
        return Progress(
            done=int(fields.get("done", 0)),
            total=int(fields.get("total", 0)),
            phase=fields.get("phase", ""),
            updated_at=float(fields["updated_at"]) if "updated_at" in fields else None,
        )
    except ValueError:
        return None
