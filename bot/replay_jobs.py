"""Background jobs for the replay: the production trigger and duties, run on demand.

The replay's clock is simulated, so jobs run when the script says ``{"jobs": "drain"}``:
every requested formation, then the cron duties that are due at the simulated time
(cold sessions formed and consolidated, full buffers consolidated).
"""

from __future__ import annotations

from datetime import datetime

from integrations.container import Services
from memory.constants import (
    FORMATION_EVERY_MESSAGES,
    FORMATION_EVERY_TOKENS,
    FORMATION_MIN_MESSAGES,
)
from memory.models import Partition, ReflectionScope, ThreadKind


class InlineJobs:
    """Formation requests queued in memory and run by :meth:`drain`."""

    def __init__(self, services: Services) -> None:
        self.s = services
        self.requested: list[str] = []

    async def after_message(self, thread_id: str) -> None:
        messages, tokens = await self.s.directory.pending(thread_id)
        if messages < FORMATION_MIN_MESSAGES:
            return
        if messages >= FORMATION_EVERY_MESSAGES or tokens >= FORMATION_EVERY_TOKENS:
            await self.s.directory.reset_pending(thread_id)
            if thread_id not in self.requested:
                self.requested.append(thread_id)

    async def drain(self, now: datetime) -> list[tuple[str, str]]:
        ran: list[tuple[str, str]] = []
        while self.requested:
            thread_id = self.requested.pop(0)
            report = await self.s.formation.form_thread(thread_id)
            ran.append(("form_thread", "skipped" if report.skipped else "complete"))
        for thread, session_id in await self.s.directory.cold_threads(now):
            while True:
                report = await self.s.formation.form_thread(thread.id)
                if report.skipped:
                    break
            partition = (
                Partition.circle(thread.circle_id)
                if thread.kind is ThreadKind.GROUP and thread.circle_id
                else Partition.dm(thread.user_id or "")
            )
            await self.s.consolidation.consolidate(
                ReflectionScope.SESSION, partition, session_id, force=True
            )
            await self.s.directory.close_session(thread.id, session_id)
            ran.append(("cold_session", "complete"))
        for _ in await self.s.consolidation.consolidate_due():
            ran.append(("consolidate", "complete"))
        return ran


async def open_replay_jobs(services: Services) -> InlineJobs:
    return InlineJobs(services)
