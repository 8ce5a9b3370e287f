"""Progress of an admin job: counters and a phase, published through a sink.

Jobs write through :class:`ProgressReporter`; the sink (a Redis hash keyed by the job id,
:mod:`integrations.redis.progress`) lets any process that can reach the queue read it,
whichever worker runs the job. Without a sink (a job run from a test or a script) the
numbers stay in memory. The phase is a few words, never memory text.
"""

from __future__ import annotations

from memory.admin_ports import Progress, ProgressSink

__all__ = ["Progress", "ProgressReporter"]


class ProgressReporter:
    """Publishes one job's progress. ``sink=None`` (a job run without a queue, e.g.
    from a test or a script) keeps the numbers in memory only."""

    def __init__(self, sink: ProgressSink | None = None) -> None:
        self.sink = sink
        self.done = 0
        self.total = 0
        self.phase = ""

    async def _write(self) -> None:
        if self.sink is not None:
            await self.sink.write(self.done, self.total, self.phase)

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
