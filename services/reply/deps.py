"""The parts one reply uses, each behind a port: the narrow bundle the composition root
hands the reply service (instead of every part of Alfred)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memory.always import AlwaysInContext
from memory.flags import MemoryFlags
from memory.llm import LLM
from memory.operations import MemoryOperations
from memory.ports import Clock
from memory.reply_ports import CalendarAccess, ErasureResidue, ReplyObserver
from memory.retrieval import Retriever
from memory.stores import DirectoryStore, FactStore, JournalStore, NotesStore
from services.reminders import Reminders


@dataclass
class ReplyDeps:
    """Storage, models and retrieval for the reply path."""

    clock: Clock
    directory: DirectoryStore
    journal: JournalStore
    facts: FactStore
    notes: NotesStore
    llm: LLM
    retriever: Retriever
    always: AlwaysInContext
    operations: MemoryOperations
    #: Read on every message: a flag changed in the settings applies at once.
    flags: Callable[[], MemoryFlags]
    observer: ReplyObserver
    #: Always there: with calendars not set up it offers no tools and says so.
    calendar: CalendarAccess
    #: Spool files and Redis's append-only file, cleaned after a forget (None: no data
    #: folder and no Redis, as in a bare test world).
    residue: ErasureResidue | None = None
    #: Reminders (not memories): set, listed and changed by rules on the reply path.
    reminders: Reminders | None = None
