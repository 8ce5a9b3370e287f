"""Application-side search indexes, one per set of visible partitions, kept in sync.

Where the database cannot score (self-hosted MongoDB, the embedded server), Alfred keeps
the facts a viewer may see in memory: their vectors for the dense leg and a BM25 index
for the keyword leg. An index covers one *scope*, the exact set of partitions visible
from a thread (a circle's group sees all of the circle's shared partitions; a member's
DM sees their DM partition plus the circle-level and their own group partitions), so
keyword statistics are those of what the viewer can see, and members of one group share
one index.

Staying correct when facts change, across processes: every fact change bumps its
revision and, after the write, its partition's version, and the partition's record keeps
which facts each of its last versions changed. Before each search the cache reads the
visible partitions' versions (one small query, privacy filter inside). For a partition
whose version moved it loads again just the facts named since the version it holds
(those no longer current or visible leave the index); when the record cannot name them
(a cache further behind than the record keeps, a write of many facts) it lists the
partition's ``{id: revision}``, diffs, and loads what changed. A partition the index has
never held is read whole, in one streamed read. Listing costs a read of every fact of
the partition (0.2-0.3 s for 3,300 facts on the embedded server), naming a few
milliseconds. A reader that raced a writer sees the version move on its next search and
catches up, so nothing is missed for long and nothing stale stays.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from memory.models import Fact, Partition, Viewer
from memory.ports import FactIndexSource, LoadedFact, PartitionVersion, Vector
from memory.privacy import is_visible
from memory.search.bm25 import BM25Index
from memory.search.candidate import Candidate
from memory.search.vector import VectorIndex

DEFAULT_MAX_SCOPES = 256
#: Facts read per query when an index loads or catches up.
LOAD_CHUNK = 500
#: Viewers whose last scope is remembered for :meth:`ScopeIndexCache.peek`, per scope kept.
ASKERS_PER_SCOPE = 4


@dataclass(frozen=True, slots=True)
class IndexedFact:
    """What search and blending need of a fact, without its embedding: the candidate a
    search resolves to, made once when the fact is indexed (not on every search)."""

    candidate: Candidate
    rev: int
    has_vector: bool

    # What an index's own bookkeeping and its tests read of the candidate.
    @property
    def content(self) -> str:
        return self.candidate.content

    @property
    def partition(self) -> Partition:
        return self.candidate.partition

    @property
    def pinned(self) -> bool:
        return self.candidate.pinned


@dataclass
class ScopeIndex:
    """The facts of one scope: metadata, vectors (current model only) and BM25."""

    dimensions: int
    model_name: str
    versions: dict[str, int] = field(default_factory=dict)
    facts: dict[str, IndexedFact] = field(default_factory=dict)
    bm25: BM25Index = field(default_factory=BM25Index)
    vectors: VectorIndex = field(init=False)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: Changes taken since it was made (a fact put or removed, a version moved, a
    #: recall noted): a ranking made at one count is the ranking at that count.
    changes: int = 0

    def __post_init__(self) -> None:
        self.vectors = VectorIndex(self.dimensions)

    def remove(self, fact_id: str) -> None:
        self.changes += 1
        if self.facts.pop(fact_id, None) is not None:
            self.bm25.remove(fact_id)
            self.vectors.remove(fact_id)

    def put(self, fact: Fact, vector: Vector | None) -> None:
        """Index ``fact`` (replacing an earlier revision of it) with ``vector``, its
        embedding as the store's load read it (None when it has none)."""
        self.remove(fact.id)
        usable = (
            vector is not None
            and fact.embedding_model == self.model_name
            and len(vector) == self.dimensions
        )
        if usable and vector is not None:
            self.vectors.add(fact.id, np.asarray(vector, dtype=np.float32))
        self.bm25.add(fact.id, fact.content)
        candidate = Candidate(
            id=fact.id,
            content=fact.content,
            category=fact.category,
            importance=fact.importance,
            partition=fact.partition,
            reinforced_at=fact.reinforced_at,
            access_count=fact.access_count,
            pinned=fact.pinned,
            terms=self.bm25.terms_of(fact.id),
        )
        self.facts[fact.id] = IndexedFact(candidate, rev=fact.rev, has_vector=usable)

    def drop_unlisted(self, partition_keys: Collection[str], listed: Collection[str]) -> None:
        """Remove the facts of ``partition_keys`` that are not among ``listed``, those
        partitions' facts as the store has them now."""
        keys = set(partition_keys)
        # Whether it was listed is asked first: after a whole load every fact was, and
        # a partition's key is a new string each time it is built.
        doomed = [
            fact_id
            for fact_id, held in self.facts.items()
            if fact_id not in listed and held.partition.key() in keys
        ]
        for fact_id in doomed:
            self.remove(fact_id)

    @property
    def stale_vectors(self) -> int:
        """Facts without a vector of the current model (need the re-embed job)."""
        return sum(1 for f in self.facts.values() if not f.has_vector)


def changed_since(held: int | None, current: PartitionVersion) -> set[str] | None:
    """The facts that changed in ``current``'s partition after version ``held``, or None
    when only listing the partition can tell (never synced, or further back than its
    record keeps, or a write that changed too many to name)."""
    recent = current.recent_changes
    if held is None or recent is None or not 0 < current.version - held <= len(recent):
        return None
    named: set[str] = set()
    for entry in recent[len(recent) - (current.version - held) :]:
        if entry is None:
            return None
        named.update(entry)
    return named


class ScopeIndexCache:
    """Scope indexes by visible-partition set, least recently used evicted first."""

    def __init__(
        self,
        source: FactIndexSource,
        *,
        dimensions: int,
        model_name: str,
        max_scopes: int = DEFAULT_MAX_SCOPES,
    ) -> None:
        self._source = source
        self._dimensions = dimensions
        self._model_name = model_name
        self._max_scopes = max_scopes
        self._scopes: OrderedDict[tuple[str, ...], ScopeIndex] = OrderedDict()
        #: The scope each viewer's last search in a thread used (:meth:`peek`).
        self._last: OrderedDict[tuple[str, str], tuple[str, ...]] = OrderedDict()
        self.loads = 0  # facts loaded from storage, for tests and metrics

    async def index_for(self, viewer: Viewer) -> ScopeIndex:
        """The up-to-date index of everything ``viewer`` may see in their thread."""
        partitions = [
            pv
            for pv in await self._source.visible_partitions(viewer)
            if is_visible(pv.partition, viewer)
        ]
        key = tuple(sorted(pv.partition.key() for pv in partitions))
        index = self._scopes.get(key)
        if index is None:
            index = ScopeIndex(dimensions=self._dimensions, model_name=self._model_name)
            self._scopes[key] = index
            while len(self._scopes) > self._max_scopes:
                self._scopes.popitem(last=False)
        self._scopes.move_to_end(key)
        async with index.lock:
            moved: dict[str, int] = {}
            listed: list[str] = []
            named: set[str] = set()
            for pv in partitions:
                pkey = pv.partition.key()
                held = index.versions.get(pkey)
                if held == pv.version:
                    continue
                moved[pkey] = pv.version
                ids = changed_since(held, pv)
                if ids is None:
                    listed.append(pkey)
                else:
                    named.update(ids)
            if named:
                await self._reload(index, viewer, sorted(named))
            first = [pkey for pkey in listed if pkey not in index.versions]
            behind = [pkey for pkey in listed if pkey in index.versions]
            if first:
                await self._load_partitions(index, viewer, first)
            if behind:
                await self._sync(index, viewer, behind)
            index.versions.update(moved)
            if moved:
                index.changes += 1
        asker = _asker(viewer)
        self._last[asker] = key
        self._last.move_to_end(asker)
        while len(self._last) > self._max_scopes * ASKERS_PER_SCOPE:
            self._last.popitem(last=False)
        return index

    def peek(self, viewer: Viewer) -> ScopeIndex | None:
        """The index ``viewer``'s last search in this thread used, as it is now, unchecked:
        for a ranking made ahead (:mod:`memory.search.guess`), never for an answer."""
        key = self._last.get(_asker(viewer))
        return self._scopes.get(key) if key is not None else None

    async def _reload(self, index: ScopeIndex, viewer: Viewer, ids: Sequence[str]) -> None:
        """Load the named facts again: those still current and visible replace what the
        index held, the others (forgotten, retired, moved out of sight) leave it."""
        # In chunks, so that one reply of the database never holds thousands of documents
        # (each fact's stored vector is 1.5 KB) and the loop gets a turn between them.
        for start in range(0, len(ids), LOAD_CHUNK):
            chunk = ids[start : start + LOAD_CHUNK]
            loaded = {f.id: f for f in await self._source.indexable_facts(viewer, chunk)}
            for fact_id in chunk:
                held = loaded.get(fact_id)
                if held is None or not _admit(index, held, viewer):
                    index.remove(fact_id)
            self.loads += len(loaded)

    async def _load_partitions(
        self, index: ScopeIndex, viewer: Viewer, partition_keys: Sequence[str]
    ) -> None:
        """A first load of whole partitions, in one streamed read of their facts: listing
        them and loading by id took five times as long on the embedded server (11 s
        against 2 s for a group's 10,000 facts). Facts of these partitions that the
        index holds and the read did not return leave it (an earlier load cut short by
        an error may have left some)."""
        seen: set[str] = set()
        async for loaded in self._source.partition_facts(viewer, partition_keys, batch=LOAD_CHUNK):
            if _admit(index, loaded, viewer):
                seen.add(loaded.id)
            self.loads += 1
        index.drop_unlisted(partition_keys, seen)

    async def _sync(self, index: ScopeIndex, viewer: Viewer, changed: Sequence[str]) -> None:
        """List the partitions' facts and load what the index lacks or holds older."""
        revisions = await self._source.fact_revisions(viewer, changed)
        index.drop_unlisted(changed, revisions)
        to_load = [
            fact_id
            for fact_id, (_, rev) in revisions.items()
            if fact_id not in index.facts or index.facts[fact_id].rev != rev
        ]
        await self._reload(index, viewer, to_load)

    def note_access(self, fact_ids: Sequence[str], at: datetime) -> None:
        """Reflect a recall in the cached signals without reloading anything."""
        wanted = set(fact_ids)
        for index in self._scopes.values():
            for fact_id in wanted & index.facts.keys():
                index.changes += 1
                old = index.facts[fact_id]
                recalled = replace(
                    old.candidate,
                    reinforced_at=max(old.candidate.reinforced_at, at),
                    access_count=old.candidate.access_count + 1,
                )
                index.facts[fact_id] = replace(old, candidate=recalled)

    def clear(self) -> None:
        self._scopes.clear()
        self._last.clear()


def _admit(index: ScopeIndex, loaded: LoadedFact, viewer: Viewer) -> bool:
    """Index ``loaded`` if it is current and ``viewer`` may see it: the last check of
    every load, first or catching up, before a fact enters the index. Whether it did."""
    fact = loaded.fact
    if not (fact.current and is_visible(fact.partition, viewer)):
        return False
    index.put(fact, loaded.vector)
    return True


def _asker(viewer: Viewer) -> tuple[str, str]:
    return (viewer.user_id, viewer.thread.id)
