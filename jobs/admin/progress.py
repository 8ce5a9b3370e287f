"""Progress of an admin job, in Redis: one hash per job id that the CLI polls.

The hash (``{namespace}:admin-progress:{job_id}``) holds ``done``, ``total`` (0 when
unknown), ``phase`` (a few words, never memory text) and ``updated_at``. Jobs write it
through :class:`ProgressReporter`; any process that can reach the queue's Redis reads it
with :func:`read_progress`, whichever worker runs the job. It expires a day after its
last write, so finished jobs leave nothing behind for long.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from jobs.config import namespace
from runtime.settings import Settings

#: Seconds a progress hash outlives its last update.
PROGRESS_TTL = 24 * 3600


def progress_key(settings: Settings, job_id: str) -> str:
    """The hash of one job (named after the deployment, like its queue)."""
    return f"{namespace(settings)}:admin-progress:{job_id}"


@dataclass(frozen=True)
class Progress:
    """A snapshot of one job's progress."""

    done: int = 0
    total: int = 0
    phase: str = ""
    updated_at: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"done": self.done, "total": self.total, "phase": self.phase}


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


class ProgressReporter:
    """Writes one job's progress hash. ``redis=None`` (a job run without a queue, e.g.
    from a test or a script) keeps the numbers in memory only."""

    def __init__(self, redis: Redis | None, key: str) -> None:
        self.redis = redis
        self.key = key
        self.done = 0
        self.total = 0
        self.phase = ""

    async def _write(self) -> None:
        if self.redis is None:
            return
        mapping = {
            "done": self.done,
            "total": self.total,
            "phase": self.phase,
            "updated_at": time.time(),
        }
        await self.redis.hset(self.key, mapping=mapping)  # type: ignore[misc]
        await self.redis.expire(self.key, PROGRESS_TTL)

    async def phase_start(self, phase: str, total: int = 0) -> None:
        """A new phase: the counter starts again at 0 of ``total`` (0: unknown)."""
        self.phase, self.total, self.done = phase, max(0, total), 0
        await self._write()

    async def advance(self, n: int = 1) -> None:
        self.done += n
        await self._write()

    async def set(self, done: int, total: int | None = None) -> None:
        self.done = done
        if total is not None:
            self.total = total
        await self._write()

    async def finish(self, phase: str = "done") -> None:
        self.phase = phase
        self.done = max(self.done, self.total)
        await self._write()
