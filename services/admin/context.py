"""What every admin job is given: the stores, a progress reporter, the operator queries
and the optional ports (mem0, calendar, the queue). Jobs are plain coroutines over this
context (no arq), so tests and scripts can run them directly and
:mod:`jobs.admin.tasks` only adds the queue's concerns."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.admin_ports import (
    AdminQueries,
    AdminStores,
    CalendarEraser,
    Mem0Maintenance,
    QueueStats,
)
from memory.lists import ListStore
from memory.reply_ports import ErasureResidue
from services.admin.progress import ProgressReporter


@dataclass
class AdminContext:
    """One run of one admin job."""

    stores: AdminStores
    queries: AdminQueries
    progress: ProgressReporter = field(default_factory=ProgressReporter)
    #: The mem0 copy, when mem0 is on.
    mem0: Mem0Maintenance | None = None
    #: The calendar's records, when the calendar integration is installed.
    calendar: CalendarEraser | None = None
    #: The queue, when the job runs through one (``stats`` reports it).
    queue: QueueStats | None = None
    #: The queue's name (reported by ``stats`` even without a queue).
    queue_name: str = ""
    #: What a purge cleans outside the stores (spool files here, kept job results, Redis's
    #: append-only file, the embedded oplog): ``runtime.erasure``.
    residue: ErasureResidue | None = None
    #: Shared lists (not memories, but a purge erases what the person put in them).
    lists: ListStore | None = None
