"""The ports of the operator's use cases (``services.admin``) and of retention.

Admin jobs read beyond the bot's stores (counts, stale vectors, mem0 listings, a
person's whole footprint) and report progress to whoever waits; each of those needs is
a Protocol here, implemented by an adapter and wired by the composition root. The
store bundles (:class:`AdminStores`, :class:`RetentionStores`) are read-only views:
the composition root's own bundle satisfies them as it stands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memory.consolidation import ConsolidationService
from memory.facts import FactWriter
from memory.llm import LLM
from memory.models import (
    Circle,
    Clarification,
    Consolidated,
    Fact,
    Partition,
    Reflection,
    ReflectionScope,
    Thread,
    User,
    Viewer,
)
from memory.ports import Clock, Embedder
from memory.stores import FactStore, JournalStore, NotesStore, SemanticMirror

Document = dict[str, Any]

# --- stores ----------------------------------------------------------------------------


class AdminDirectory(Protocol):
    async def thread(self, thread_id: str) -> Thread | None: ...
    async def user(self, user_id: str) -> User | None: ...
    async def circle(self, circle_id: str) -> Circle | None: ...
    async def viewer(self, user_id: str, thread: Thread) -> Viewer: ...
    async def delete_user(self, user_id: str) -> dict[str, int]: ...


class AdminJournal(JournalStore, Protocol):
    async def set_aside_counts(self) -> dict[str, int]: ...
    async def release_set_aside(self, thread_id: str | None = None) -> dict[str, int]: ...


class AdminFacts(FactStore, Protocol):
    async def set_embedding(self, fact_id: str, embedding: Sequence[float], model: str) -> bool: ...


class AdminNotes(NotesStore, Protocol):
    async def buffered_groups(
        self,
    ) -> list[tuple[ReflectionScope, Partition, str | None, int]]: ...


class AdminStores(Protocol):
    """What the admin use cases drive of the domain (read-only attributes)."""

    @property
    def directory(self) -> AdminDirectory: ...
    @property
    def facts(self) -> AdminFacts: ...
    @property
    def notes(self) -> AdminNotes: ...
    @property
    def journal(self) -> AdminJournal: ...
    @property
    def writer(self) -> FactWriter: ...
    @property
    def consolidation(self) -> ConsolidationService: ...
    @property
    def llm(self) -> LLM: ...
    @property
    def embedder(self) -> Embedder: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def mirror(self) -> SemanticMirror | None: ...


class RetentionFacts(Protocol):
    async def in_circle(self, circle_id: str) -> list[Fact]: ...
    async def delete(self, fact_ids: Sequence[str]) -> list[Fact]: ...


class RetentionNotes(Protocol):
    async def delete_for_circle(self, circle_id: str) -> dict[str, int]: ...


class RetentionJournal(Protocol):
    async def delete_for_circle(self, circle_id: str) -> int: ...
    async def purge_formed_before(self, cutoff: datetime) -> int: ...


class RetentionDirectory(Protocol):
    async def archived_before(self, cutoff: datetime) -> list[Circle]: ...
    async def delete_circle(self, circle_id: str) -> None: ...


class RetentionStores(Protocol):
    """What the retention duties delete from (read-only attributes)."""

    @property
    def facts(self) -> RetentionFacts: ...
    @property
    def notes(self) -> RetentionNotes: ...
    @property
    def journal(self) -> RetentionJournal: ...
    @property
    def directory(self) -> RetentionDirectory: ...
    @property
    def mirror(self) -> SemanticMirror | None: ...


# --- operator queries ------------------------------------------------------------------


class AdminQueries(Protocol):
    """Reads (and a few deletes) the admin jobs need beyond the bot's stores. Reads for
    a person apply the privacy filter inside the query; reads for the operator return
    counts, ids, or facts to rewrite, never text to show."""

    async def visible_facts(self, viewer: Viewer) -> list[Fact]: ...
    async def visible_reflections(self, viewer: Viewer) -> list[Reflection]: ...
    async def visible_blobs(self, viewer: Viewer) -> list[Consolidated]: ...
    async def clarifications_for(self, viewer: Viewer) -> list[Clarification]: ...
    async def user_footprint(self, user_id: str) -> dict[str, int]: ...
    async def delete_dm_requests(self, user_id: str) -> int: ...
    async def count_stale_embeddings(self, model: str, dims: int) -> int: ...
    async def stale_embeddings(
        self, model: str, dims: int, *, limit: int, skip_ids: Sequence[str] = ()
    ) -> list[tuple[str, str]]: ...
    async def current_facts_without_mem0(self, *, limit: int = 0) -> list[Fact]: ...
    async def partition_keys(self) -> list[str]: ...
    async def known_mem0_ids(self, mem0_ids: Sequence[str]) -> set[str]: ...
    async def linked_facts(self, partition_key: str) -> list[Fact]: ...
    async def collection_counts(self) -> dict[str, int]: ...
    async def fact_counts(self, model: str, dims: int) -> dict[str, int]: ...
    async def partition_kind_counts(self) -> dict[str, dict[str, int]]: ...
    async def circle_counts(self) -> dict[str, dict[str, Any]]: ...
    async def partition_counts(self, top: int) -> dict[str, Any]: ...
    async def job_started(self, name: str, job_id: str, at: datetime) -> None: ...
    async def job_finished(
        self,
        name: str,
        job_id: str,
        at: datetime,
        status: str,
        *,
        summary: Document | None = None,
        error: str | None = None,
    ) -> None: ...
    async def job_runs(self) -> dict[str, Document]: ...


# --- progress, the queue, mem0 and the calendar -------------------------------------------


@dataclass(frozen=True)
class Progress:
    """A snapshot of one job's progress (a few words of phase, never memory text)."""

    done: int = 0
    total: int = 0
    phase: str = ""
    updated_at: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"done": self.done, "total": self.total, "phase": self.phase}


class ProgressSink(Protocol):
    """Where one job's progress is published for whoever waits on it."""

    async def write(self, done: int, total: int, phase: str) -> None: ...


class QueueStats(Protocol):
    """The queue as ``stats`` reports it: depth (without ``own_job``), worker alive."""

    async def queue_stats(self, own_job: str | None) -> dict[str, Any]: ...


@dataclass(frozen=True)
class MirrorListing:
    """The mem0 ids one partition holds; ``complete`` is False when the listing was capped."""

    ids: list[str]
    complete: bool


class Mem0Maintenance(Protocol):
    """The mem0 copy as the operator repairs and erases it."""

    @property
    def name(self) -> str: ...

    async def list_partition(self, partition_key: str) -> MirrorListing | None:
        """The copies mem0 lists under a partition key, or None when it cannot list."""
        ...

    async def mirror(self, fact: Fact) -> bool:
        """Copy one fact (fails soft: False, never raises)."""
        ...

    async def delete(self, mem0_ids: Sequence[str]) -> None: ...


class CalendarEraser(Protocol):
    """The calendar's records of a person, for the purge."""

    async def counts(self, user_id: str) -> dict[str, int]: ...

    async def forget(self, user_id: str) -> None: ...
