"""The parts one reply uses, each behind a port: the narrow bundle the composition root
hands the reply service (instead of every part of Alfred)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from memory.always import AlwaysInContext
from memory.flags import MemoryFlags
from memory.lists import ListStore
from memory.llm import LLM
from memory.operations import MemoryOperations
from memory.ports import Clock
from memory.reply_ports import CalendarAccess, ErasureResidue, PendingDeliveries, ReplyObserver
from memory.retrieval import Retriever
from memory.stores import DirectoryStore, FactStore, JournalStore, NotesStore
from services.reminders import Reminders
from services.timezones import TimeZones


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
    #: Shared lists ("the shopping list"): not memories, kept apart (memory/lists.py).
    lists: ListStore
    #: Spool files and Redis's append-only file, cleaned after a forget (None: no data
    #: folder and no Redis, as in a bare test world).
    residue: ErasureResidue | None = None
    #: Whose clock the reply's "now" is on (None: UTC, as in a bare test world).
    time_zones: TimeZones | None = None
    #: What waits for a person to open a chat with Alfred (None: nowhere to keep it, and
    #: a refused DM is answered with words instead of a start link).
    deliveries: PendingDeliveries | None = None
    #: Reminders (not memories): set, listed and changed by rules on the reply path.
    reminders: Reminders | None = None
    #: The scope of one turn: the storage adapters share one turn's reads inside it
    #: (a few combined reads instead of one per step); nothing outlives the turn.
    turn_scope: Callable[[], AbstractContextManager[None]] = nullcontext
