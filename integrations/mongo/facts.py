"""Facts in MongoDB: writes with dedup and versioning, reads with the privacy filter inside.

Every read that can reach a person takes a :class:`Viewer` and runs with
``visibility_filter(viewer)`` in its query; the few operator reads (dump, purge, jobs)
are named as such. After every write the partition's version is bumped, which is how
search caches in every process learn that something changed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pymongo import ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError, DuplicateKeyError

from integrations.mongo import turn_memo
from integrations.mongo.codec import (
    fact_from_doc,
    fact_to_doc,
    loaded_fact_from_doc,
    vector_to_bson,
)
from integrations.mongo.turn_reads import memory_snapshot, visible_partition_records
from integrations.mongo.upsert import upsert_returning
from integrations.mongo.visible_reads import count_visible, visible_documents
from memory.constants import FACTS, PARTITIONS
from memory.models import Fact, FactVersion, Partition, Viewer
from memory.ports import LoadedFact
from memory.privacy import and_visible

Document = dict[str, Any]
NO_EMBEDDING = {"embedding": 0}


#: Versions whose changed fact ids a partition's record keeps (``changes``, oldest first).
CHANGE_RING = 16
#: A write that changes more facts of one partition than this is recorded as "many"
#: (``ids: None``): a cache then lists the partition, as it did for every change before.
CHANGE_IDS_MAX = 16


@dataclass(frozen=True)
class StoredPartitionVersion:
    """A partition with facts, the version of its facts, and what its last versions
    changed (see :class:`memory.ports.PartitionVersion`)."""

    partition: Partition
    version: int
    recent_changes: tuple[tuple[str, ...] | None, ...] | None = None

    @classmethod
    def from_doc(cls, doc: Document) -> StoredPartitionVersion:
        """Read a ``memory_partitions`` record. Its ring is trusted only when ``ring_end``
        equals ``version``: every bump increments both and pushes one entry, so the
        entries are the last versions' in order; anything else that moved the version
        (an older release, a circle move) leaves them unequal until the next bump."""
        version = int(doc.get("version", 0))
        ring = doc.get("changes")
        recent: tuple[tuple[str, ...] | None, ...] | None = None
        if isinstance(ring, list) and int(doc.get("ring_end", -1)) == version:
            recent = tuple(
                tuple(str(i) for i in e["ids"])
                if isinstance(e, dict) and isinstance(e.get("ids"), list)
                else None
                for e in ring
            )
        return cls(Partition.from_fields(doc), version, recent)


def _ids_by_partition(facts: Sequence[Fact]) -> dict[Partition, list[str]]:
    grouped: dict[Partition, list[str]] = {}
    for fact in facts:
        grouped.setdefault(fact.partition, []).append(fact.id)
    return grouped


def _current_by_id(viewer: Viewer, ids: Sequence[str]) -> list[Document]:
    """The current facts among ``ids`` that ``viewer`` may see, in two stages: the ids
    looked up in the ``_id`` index, then the privacy filter on those documents alone,
    inside the database (:meth:`MongoFactStore.load_facts` says why)."""
    return [
        {"$match": {"_id": {"$in": list(ids)}}},
        {"$match": and_visible(viewer, {"current": True})},
    ]


class MongoFactStore:
    """The ``memory_facts`` collection, plus the partition versions beside it."""

    def __init__(self, db: AsyncDatabase[Document]) -> None:
        self._db = db
        self._facts = db[FACTS]
        self._partitions = db[PARTITIONS]

    # --- writes -------------------------------------------------------------------

    async def _bump(self, partition: Partition, fact_ids: Sequence[str]) -> None:
        """Move the partition's version on after a change to ``fact_ids`` (which must have
        landed: a reader that sees the new version may load them at once), recording
        which facts changed so that caches load only those."""
        ids = list(dict.fromkeys(fact_ids))
        entry = {"ids": ids if len(ids) <= CHANGE_IDS_MAX else None}
        doc = await upsert_returning(
            self._partitions,
            {"_id": partition.key()},
            {
                "$inc": {"version": 1, "ring_end": 1},
                "$push": {"changes": {"$each": [entry], "$slice": -CHANGE_RING}},
                "$setOnInsert": partition.as_fields(),
            },
        )
        version = int(doc.get("version", 0))
        if int(doc.get("ring_end", -1)) != version:
            # Moved without its ring (see StoredPartitionVersion.from_doc): start the
            # ring again from this version; readers list the partition meanwhile.
            await self._partitions.update_one(
                {"_id": partition.key(), "version": version},
                {"$set": {"ring_end": version, "changes": []}},
            )

    async def add(self, fact: Fact) -> tuple[Fact, bool]:
        """Store a new fact; if the partition already holds the same content, return that.

        The unique (partition, hash) key among current facts makes this safe when two
        workers store the same fact at once: one inserts, the other gets the existing one.
        """
        try:
            await self._facts.insert_one(fact_to_doc(fact))
        except DuplicateKeyError:
            existing = await self._facts.find_one(
                {"pkey": fact.partition.key(), "hash": fact.hash, "current": True}
            )
            if existing is not None:
                return fact_from_doc(existing), False
            raise
        await self._bump(fact.partition, [fact.id])
        return fact, True

    async def add_bulk(self, facts: Sequence[Fact]) -> int:
        """Insert many new facts at once (imports, benchmarks); duplicates are skipped.
        Returns how many were inserted."""
        if not facts:
            return 0
        try:
            result = await self._facts.insert_many([fact_to_doc(f) for f in facts], ordered=False)
            inserted = len(result.inserted_ids)
        except BulkWriteError as exc:
            inserted = int(exc.details.get("nInserted", 0))
        for partition, ids in _ids_by_partition(facts).items():
            await self._bump(partition, ids)
        return inserted

    async def update_content(
        self,
        fact_id: str,
        *,
        content: str,
        content_hash: str,
        embedding: Sequence[float] | None,
        embedding_model: str | None,
        at: datetime,
        reason: str | None = None,
        importance: int | None = None,
    ) -> Fact | None:
        """Reword a current fact, keeping the old wording in its history (UPDATE)."""
        doc = await self._facts.find_one({"_id": fact_id, "current": True}, NO_EMBEDDING)
        if doc is None:
            return None
        old = FactVersion(content=doc["content"], changed_at=at, reason=reason)
        update: Document = {
            "$set": {
                "content": content,
                "hash": content_hash,
                "embedding": vector_to_bson(list(embedding) if embedding is not None else None),
                "embedding_model": embedding_model,
                "embedding_dims": len(embedding) if embedding is not None else None,
                "updated_at": at,
                **({"importance": importance} if importance is not None else {}),
            },
            "$inc": {"version": 1, "rev": 1},
            "$push": {"history": old.model_dump()},
            # The message the old wording answered does not explain the new one, which is
            # embedded alone (memory.facts.FactWriter.reword): re-embedding must agree.
            "$unset": {"provenance.context": ""},
        }
        try:
            new = await self._facts.find_one_and_update(
                {"_id": fact_id, "current": True}, update, return_document=ReturnDocument.AFTER
            )
        except DuplicateKeyError:
            # The new wording already exists in the partition: the old fact is redundant.
            await self.invalidate(fact_id, at=at, reason="merged into an identical fact")
            return None
        if new is None:
            return None
        fact = fact_from_doc(new)
        await self._bump(fact.partition, [fact.id])
        return fact

    async def invalidate(self, fact_id: str, *, at: datetime, reason: str | None = None) -> bool:
        """Mark a fact no longer true (contradicted); it stays as history, out of retrieval."""
        doc = await self._facts.find_one_and_update(
            {"_id": fact_id, "current": True},
            {
                "$set": {
                    "invalid_at": at,
                    "current": False,
                    "updated_at": at,
                    "invalid_reason": reason,
                },
                "$inc": {"rev": 1},
            },
            projection=NO_EMBEDDING,
        )
        if doc is None:
            return False
        await self._bump(Partition.from_fields(doc), [str(doc["_id"])])
        return True

    async def set_pinned(self, fact_ids: Sequence[str], pinned: bool) -> int:
        """Pin or unpin current facts. Their partitions' versions are bumped so every
        cached scope index reloads them (ranking reads the flag)."""
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            return 0
        wanted = {"_id": {"$in": ids}, "current": True, "pinned": {"$ne": pinned}}
        docs = await self._facts.find(wanted, projection=NO_EMBEDDING).to_list(None)
        if not docs:
            return 0
        result = await self._facts.update_many(
            {**wanted, "_id": {"$in": [d["_id"] for d in docs]}},
            {"$set": {"pinned": pinned}, "$inc": {"rev": 1}},
        )
        pinned_now = [fact_from_doc(d) for d in docs]
        for partition, changed in _ids_by_partition(pinned_now).items():
            await self._bump(partition, changed)
        return int(result.modified_count)

    async def set_embedding(self, fact_id: str, embedding: Sequence[float], model: str) -> bool:
        """Replace a fact's vector (re-embedding after a model switch)."""
        doc = await self._facts.find_one_and_update(
            {"_id": fact_id},
            {
                "$set": {
                    "embedding": vector_to_bson(list(embedding)),
                    "embedding_model": model,
                    "embedding_dims": len(embedding),
                },
                "$inc": {"rev": 1},
            },
            projection=NO_EMBEDDING,
        )
        if doc is None:
            return False
        await self._bump(Partition.from_fields(doc), [str(doc["_id"])])
        return True

    async def set_mem0_id(self, fact_id: str, mem0_id: str | None) -> None:
        await self._facts.update_one({"_id": fact_id}, {"$set": {"mem0_id": mem0_id}})

    async def delete(self, fact_ids: Sequence[str]) -> list[Fact]:
        """Hard-delete facts (forget), returning what was removed (for the cascade)."""
        if not fact_ids:
            return []
        docs = [d async for d in self._facts.find({"_id": {"$in": list(fact_ids)}}, NO_EMBEDDING)]
        if not docs:
            return []
        await self._facts.delete_many({"_id": {"$in": [d["_id"] for d in docs]}})
        removed = [fact_from_doc(d) for d in docs]
        for partition, ids in _ids_by_partition(removed).items():
            await self._bump(partition, ids)
        return removed

    async def record_access(self, fact_ids: Sequence[str], at: datetime) -> None:
        """Count a recall. Does not bump versions: access stats never invalidate caches."""
        if fact_ids:
            await self._facts.update_many(
                {"_id": {"$in": list(fact_ids)}},
                {"$inc": {"access_count": 1}, "$set": {"last_accessed_at": at}},
            )

    # --- reads for a viewer -----------------------------------------------------------

    async def visible_partitions(self, viewer: Viewer) -> list[StoredPartitionVersion]:
        memo = turn_memo.current()  # in a reply turn, read with the turn's other reads
        if memo is not None:
            parts = await memory_snapshot(self._db, memo, viewer)
            return [StoredPartitionVersion.from_doc(d) for d in parts[PARTITIONS]]
        records = await visible_partition_records(self._db, viewer)
        return [StoredPartitionVersion.from_doc(d) for d in records]

    async def fact_revisions(
        self, viewer: Viewer, partition_keys: Sequence[str]
    ) -> dict[str, tuple[str, int]]:
        """Two stages, as in :meth:`load_facts`: the partitions' current facts from their
        index, then the privacy filter on those alone. In one ``$and`` the embedded server
        scanned every fact (about 1 s at 19,000; 0.2-0.3 s for a 3,300-fact partition
        this way, which is why a cache that knows what changed loads only that)."""
        pipeline = [
            {"$match": {"pkey": {"$in": list(partition_keys)}, "current": True}},
            {"$match": and_visible(viewer)},
            {"$project": {"pkey": 1, "rev": 1}},
        ]
        return {
            str(d["_id"]): (d["pkey"], int(d.get("rev", 1)))
            async for d in await self._facts.aggregate(pipeline)
        }

    async def partition_facts(
        self, viewer: Viewer, partition_keys: Sequence[str], *, batch: int
    ) -> AsyncIterator[LoadedFact]:
        """Two stages, as in :meth:`fact_revisions`, with the whole documents, ``batch``
        per reply. The embedded server takes 0.3-0.5 s to find 500 facts by id, and
        about 1 s to stream all 10,000 of a group's facts from the partition index
        (2026-11-29)."""
        pipeline = [
            {"$match": {"pkey": {"$in": list(partition_keys)}, "current": True}},
            {"$match": and_visible(viewer)},
        ]
        async with await self._facts.aggregate(pipeline, batchSize=batch) as cursor:
            async for doc in cursor:
                yield loaded_fact_from_doc(doc)

    async def load_facts(
        self, viewer: Viewer, ids: Sequence[str], *, with_embeddings: bool = True
    ) -> list[Fact]:
        """The current ones of ``ids`` that ``viewer`` may see; without their embeddings
        when a caller only ranks or shows them (each is 1.5 KB stored and 384 Python
        floats read).

        Two stages, so the ids are looked up in the ``_id`` index and the privacy filter
        then runs on those documents alone, inside the database: the embedded server
        plans no index for a filter that puts them together (an ``$and``), and matched
        every fact of the collection against every id instead (11.8 s for 500 ids among
        20,000 facts, 0.19 s this way; MongoDB merges the stages and uses the index)."""
        pipeline = _current_by_id(viewer, ids)
        if not with_embeddings:
            pipeline.append({"$project": NO_EMBEDDING})
        return [fact_from_doc(d) async for d in await self._facts.aggregate(pipeline)]

    async def indexable_facts(self, viewer: Viewer, ids: Sequence[str]) -> list[LoadedFact]:
        """What :meth:`load_facts` reads, each embedding decoded as the float32 row a
        search index keeps (as :meth:`partition_facts` does), not as Python floats."""
        cursor = await self._facts.aggregate(_current_by_id(viewer, ids))
        return [loaded_fact_from_doc(d) async for d in cursor]

    async def list_visible(
        self,
        viewer: Viewer,
        *,
        include_history: bool = False,
        limit: int = 0,
        with_embeddings: bool = False,
    ) -> list[Fact]:
        """The facts ``viewer`` may see, newest first (for "what do you remember")."""
        found = await visible_documents(
            self._facts,
            viewer,
            None if include_history else {"current": True},
            sort=[("created_at", -1)],
            limit=limit,
            projection=None if with_embeddings else NO_EMBEDDING,
        )
        return [fact_from_doc(d) for d in found]

    async def count_visible(self, viewer: Viewer) -> int:
        return await count_visible(self._facts, viewer, {"current": True})

    async def current_in_partition(self, partition: Partition) -> list[Fact]:
        """Current facts of one partition (formation compares within a partition only)."""
        return [
            fact_from_doc(d)
            async for d in self._facts.find({"pkey": partition.key(), "current": True})
        ]

    # --- operator reads (audit, jobs): not for showing to users ---------------------

    async def get(self, fact_id: str) -> Fact | None:
        doc = await self._facts.find_one({"_id": fact_id})
        return fact_from_doc(doc) if doc else None

    async def in_circle(self, circle_id: str) -> list[Fact]:
        """Every fact of a circle's partitions, history included (the purge of a circle)."""
        return [
            fact_from_doc(d) async for d in self._facts.find({"circle_id": circle_id}, NO_EMBEDDING)
        ]

    async def count_other_models(self, model_name: str) -> int:
        """Current facts whose vector came from another embedding model (or none)."""
        return await self._facts.count_documents(
            {"current": True, "embedding_model": {"$ne": model_name}}
        )

    async def owned_by(self, user_id: str) -> list[Fact]:
        """Every fact of a user's, or stated by them (for erasure and export jobs)."""
        query = {"$or": [{"owner_user_id": user_id}, {"provenance.speaker_id": user_id}]}
        return [fact_from_doc(d) async for d in self._facts.find(query, NO_EMBEDDING)]

    async def current_from_message(self, message_id: str) -> list[Fact]:
        """Current facts whose provenance cites the journaled message ``message_id``."""
        query = {"current": True, "provenance.message_ids": message_id}
        return [fact_from_doc(d) async for d in self._facts.find(query, NO_EMBEDDING)]

    async def all_for_audit(self) -> list[Fact]:
        return [fact_from_doc(d) async for d in self._facts.find({}, NO_EMBEDDING)]
