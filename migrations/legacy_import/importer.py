"""Writing legacy items into Alfred's collections, kind by kind (the mapping is in
:mod:`migrations.legacy_import`'s docstring)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from integrations.mongo.codec import consolidated_to_doc
from integrations.mongo.facts import MongoFactStore
from integrations.mongo.notes import MongoNotes
from integrations.mongo.upsert import upsert
from memory.constants import (
    CONSOLIDATED,
    CONSOLIDATED_WORD_LIMIT,
    FACTS,
    PARTITIONS,
    REFLECTIONS,
)
from memory.errors import AlfredError, ConfigurationError
from memory.facts import clip_words
from memory.ids import content_hash
from memory.models import (
    Category,
    Consolidated,
    Fact,
    Partition,
    Provenance,
    Reflection,
    ReflectionScope,
)
from memory.ports import Clock, Embedder
from migrations.legacy_import.report import (
    AGENT_SHARD,
    DIRECTIVE,
    EMBED_BATCH,
    EPISODE,
    FACT,
    LEGACY_AGENT,
    LEGACY_LEDGER,
    LEGACY_SESSIONS,
    LEGACY_USER,
    SUGGESTION,
    UNKNOWN,
    USER_BLOB,
    ImportReport,
)
from migrations.legacy_import.source import (
    UserResolver,
    as_legacy_id,
    existing_ids,
    first_date,
    legacy_record_id,
    legacy_session_id,
    related_users,
    text_of,
)

log = logging.getLogger(__name__)

Document = dict[str, Any]
Db = AsyncDatabase[Document]

# --- the plan --------------------------------------------------------------------------


@dataclass
class _Directive:
    legacy_id: str
    #: (legacy agent, legacy owner): the old system kept one user blob per pair.
    agent: str | None
    legacy_owner: str
    owner: str
    content: str
    created_at: datetime
    #: The legacy blob of the owner had absorbed it (it is not in its unabsorbed list).
    absorbed_in_legacy: bool

    @property
    def id(self) -> str:
        return legacy_record_id(DIRECTIVE, self.legacy_id, self.legacy_owner)


@dataclass
class _UserBlob:
    legacy_id: str
    agent: str | None
    legacy_owner: str
    owner: str
    content: str
    updated_at: datetime
    unabsorbed: set[str]

    @property
    def id(self) -> str:
        return legacy_record_id(USER_BLOB, self.legacy_id, self.legacy_owner)


class LegacyImporter:
    def __init__(
        self,
        db: Db,
        *,
        dry_run: bool,
        embedder: Embedder | None,
        clock: Clock,
        users: UserResolver,
        agent_id: str | None,
        report: ImportReport,
    ) -> None:
        self.db = db
        self.dry_run = dry_run
        self.embedder = embedder
        self.clock = clock
        self.users = users
        self.agent_id = agent_id
        self.report = report
        self.facts = MongoFactStore(db)
        self.notes = MongoNotes(db)

    async def _known(self, collection: str, ids: Iterable[str]) -> tuple[set[str], set[str]]:
        """(ids present in ``collection``, ids imported before: present or in the ledger)."""
        wanted = list(dict.fromkeys(ids))
        present = await existing_ids(self.db, collection, wanted)
        return present, present | await existing_ids(self.db, LEGACY_LEDGER, wanted)

    async def _remember(self, record_id: str, kind: str) -> None:
        """Enter a written (or deliberately not written) record in the ledger."""
        if self.dry_run:
            return
        await upsert(
            self.db[LEGACY_LEDGER],
            {"_id": record_id},
            {"$setOnInsert": {"kind": kind, "at": self.clock.now()}},
        )

    async def _write_reflection(self, reflection: Reflection, kind: str, legacy_id: str) -> bool:
        """Store one imported reflection (not in a dry run), enter it in the ledger and
        the report; False when an earlier run had stored it already."""
        if not self.dry_run and not await self.notes.add_reflection(reflection):
            self.report.skip(kind, legacy_id, "already_imported")
            return False
        await self._remember(reflection.id, kind)
        self.report.ok(kind)
        self.report.written[REFLECTIONS] += 1
        return True

    def _other_agent(self, doc: Document) -> bool:
        return self.agent_id is not None and as_legacy_id(doc.get("agent_id")) != self.agent_id

    def _owner(self, kind: str, doc: Document) -> tuple[str, str] | None:
        """(legacy owner, Alfred owner) of a raw memory, or None (skip recorded)."""
        legacy_id = str(doc["_id"])
        related = related_users(doc)
        if not related:
            self.report.skip(kind, legacy_id, "no_owner")
            return None
        if len(related) > 1:
            self.report.skip(kind, legacy_id, "several_owners")
            return None
        owner = self.users(related[0])
        if owner is None:
            self.report.skip(kind, legacy_id, "unmapped_user")
            return None
        return related[0], owner

    # --- user blobs and directives ----------------------------------------------------

    async def user_blobs(self) -> list[_UserBlob]:
        """Read every legacy user blob (nothing written yet)."""
        blobs: list[_UserBlob] = []
        if LEGACY_USER not in self.report.legacy_collections:
            return blobs
        async for doc in self.db[LEGACY_USER].find({}).sort("_id", 1):
            legacy_id = str(doc["_id"])
            self.report.seen(USER_BLOB)
            if self._other_agent(doc):
                self.report.skip(USER_BLOB, legacy_id, "other_agent")
                continue
            legacy_owner = as_legacy_id(doc.get("user_id"))
            if legacy_owner is None:
                self.report.skip(USER_BLOB, legacy_id, "no_owner")
                continue
            owner = self.users(legacy_owner)
            if owner is None:
                self.report.skip(USER_BLOB, legacy_id, "unmapped_user")
                continue
            blobs.append(
                _UserBlob(
                    legacy_id=legacy_id,
                    agent=as_legacy_id(doc.get("agent_id")),
                    legacy_owner=legacy_owner,
                    owner=owner,
                    content=text_of(doc),
                    updated_at=first_date(doc, "last_updated_at", "updatedAt", "createdAt")
                    or self.clock.now(),
                    unabsorbed={str(i) for i in doc.get("unabsorbed_memory_ids") or []},
                )
            )
        return blobs

    async def directives(self, blobs: Sequence[_UserBlob]) -> list[_Directive]:
        """Plan every directive: its owner(s), and whether the legacy blob absorbed it."""
        unabsorbed_by: dict[str, list[_UserBlob]] = {}
        blob_of: dict[tuple[str | None, str], _UserBlob] = {}
        for blob in blobs:
            blob_of.setdefault((blob.agent, blob.legacy_owner), blob)
            for directive_id in blob.unabsorbed:
                unabsorbed_by.setdefault(directive_id, []).append(blob)
        planned: list[_Directive] = []
        async for doc in self._raw(DIRECTIVE):
            legacy_id = str(doc["_id"])
            content = text_of(doc)
            if not content:
                self.report.skip(DIRECTIVE, legacy_id, "empty")
                continue
            created = first_date(doc, "createdAt", "created_at") or self.clock.now()
            listed = unabsorbed_by.get(legacy_id)
            if listed:
                # The blob that lists it as unabsorbed names its owner: the old system
                # showed it to exactly that user. Several blobs: one private copy each.
                for blob in listed:
                    planned.append(
                        _Directive(
                            legacy_id,
                            blob.agent,
                            blob.legacy_owner,
                            blob.owner,
                            content,
                            created,
                            absorbed_in_legacy=False,
                        )
                    )
                continue
            owners = self._owner(DIRECTIVE, doc)
            if owners is None:
                continue
            legacy_owner, owner = owners
            agent = as_legacy_id(doc.get("agent_id"))
            legacy_blob = blob_of.get((agent, legacy_owner))
            planned.append(
                _Directive(
                    legacy_id,
                    agent,
                    legacy_owner,
                    owner,
                    content,
                    created,
                    absorbed_in_legacy=legacy_blob is not None and bool(legacy_blob.content),
                )
            )
        return planned

    async def import_user_blobs_and_directives(self) -> None:
        blobs = await self.user_blobs()
        directives = await self.directives(blobs)

        # 1. Blobs first: a directive is marked absorbed only into a blob that is saved.
        #    Keyed by legacy (agent, owner): when two legacy blobs land on one Telegram
        #    user (two agents, or two accounts), one is imported and the directives the
        #    other had absorbed stay unabsorbed, so consolidation merges them in.
        imported_blob: dict[tuple[str | None, str], str] = {}
        claimed: set[str] = set()  # Alfred owners whose user blob is decided
        present_blobs, known_blobs = await self._known(CONSOLIDATED, (b.id for b in blobs))
        for blob in sorted(blobs, key=lambda b: b.updated_at, reverse=True):
            if not blob.content:
                self.report.skip(USER_BLOB, blob.legacy_id, "empty")
                continue
            if blob.id in known_blobs:
                self.report.skip(USER_BLOB, blob.legacy_id, "already_imported")
                if blob.id in present_blobs:  # (not if it was deleted since: "forget")
                    imported_blob[(blob.agent, blob.legacy_owner)] = blob.id
                claimed.add(blob.owner)
                continue
            partition = Partition.dm(blob.owner)
            if blob.owner in claimed or await self.notes.blob(ReflectionScope.USER, partition):
                self.report.skip(USER_BLOB, blob.legacy_id, "partition_has_blob")
                continue
            record = Consolidated(
                id=blob.id,
                scope=ReflectionScope.USER,
                partition=partition,
                content=blob.content,
                word_limit=CONSOLIDATED_WORD_LIMIT["user"],
                reflection_ids=[
                    d.id
                    for d in directives
                    if (d.agent, d.legacy_owner) == (blob.agent, blob.legacy_owner)
                    and d.absorbed_in_legacy
                ],
                unabsorbed_ids=[],
                last_consolidated_at=blob.updated_at,
            )
            if not self.dry_run and not await self._save_blob(record):
                # Formed by Alfred between our check and our write: keep Alfred's.
                self.report.skip(USER_BLOB, blob.legacy_id, "partition_has_blob")
                continue
            await self._remember(blob.id, USER_BLOB)
            claimed.add(blob.owner)
            imported_blob[(blob.agent, blob.legacy_owner)] = blob.id
            self.report.ok(USER_BLOB)
            self.report.written[CONSOLIDATED] += 1

        # 2. Directives → user reflections (absorbed only into a blob imported above).
        _present, existing = await self._known(REFLECTIONS, (d.id for d in directives))
        for d in directives:
            if d.id in existing:
                self.report.skip(DIRECTIVE, d.legacy_id, "already_imported")
                continue
            into = imported_blob.get((d.agent, d.legacy_owner)) if d.absorbed_in_legacy else None
            reflection = Reflection(
                id=d.id,
                content=d.content,
                scope=ReflectionScope.USER,
                partition=Partition.dm(d.owner),
                absorbed=into is not None,
                absorbed_into=into,
                created_at=d.created_at,
            )
            if await self._write_reflection(reflection, DIRECTIVE, d.legacy_id):
                existing.add(d.id)

    async def _save_blob(self, blob: Consolidated) -> bool:
        """Store ``blob`` unless its (scope, partition, session) holds another one.

        Never replaces a blob Alfred formed (the unique index also keeps a concurrent
        one out); rewrites one this import wrote (a re-run after a crash, or a legacy
        session with more episodes than last time). True when ``blob`` is what is stored.
        """
        doc = consolidated_to_doc(blob)
        key = {
            "scope": doc["scope"],
            "visibility": doc["visibility"],
            "circle_id": doc["circle_id"],
            "owner_user_id": doc["owner_user_id"],
            "session_id": doc.get("session_id"),
        }
        coll = self.db[CONSOLIDATED]
        current = await coll.find_one(key, {"_id": 1})
        if current is None:
            try:
                await coll.insert_one(doc)
            except DuplicateKeyError:
                return False
        elif current["_id"] == blob.id:
            await coll.update_one(
                {"_id": blob.id}, {"$set": {k: v for k, v in doc.items() if k != "_id"}}
            )
        else:
            return False
        # The always-in-context cache watches this version (as MongoNotes does).
        await upsert(
            self.db[PARTITIONS],
            {"_id": blob.partition.key()},
            {"$inc": {"notes_version": 1}, "$setOnInsert": blob.partition.as_fields()},
        )
        return True

    # --- episodes ---------------------------------------------------------------------

    async def import_episodes(self) -> None:
        groups: dict[tuple[str, str, str], list[tuple[str, str, datetime]]] = {}
        async for doc in self._raw(EPISODE):
            legacy_id = str(doc["_id"])
            content = text_of(doc)
            if not content:
                self.report.skip(EPISODE, legacy_id, "empty")
                continue
            owners = self._owner(EPISODE, doc)
            if owners is None:
                continue
            session = as_legacy_id(doc.get("source_session_id")) or f"unknown-{legacy_id}"
            created = first_date(doc, "createdAt", "created_at") or self.clock.now()
            groups.setdefault((session, *owners), []).append((legacy_id, content, created))

        for (session, legacy_owner, owner), episodes in groups.items():
            episodes.sort(key=lambda e: (e[2], e[0]))
            partition = Partition.dm(owner)
            session_id = legacy_session_id(session)
            blob_id = legacy_record_id("session_blob", session, legacy_owner)
            ids = {legacy_record_id(EPISODE, e[0], legacy_owner): e for e in episodes}
            present, known = await self._known(REFLECTIONS, ids)
            new = {rid: e for rid, e in ids.items() if rid not in known}
            for rid in ids:
                if rid in known:
                    self.report.skip(EPISODE, ids[rid][0], "already_imported")
            if not new:
                continue
            # What the blob holds: episodes stored now or still stored from before (one
            # deleted since, by "forget", stays out).
            kept = [e for rid, e in ids.items() if rid in present or rid in new]
            blob_exists = bool((await self._known(CONSOLIDATED, [blob_id]))[1])
            # The session's blob: what the old system kept in context for it (its last
            # episodes, in order). Saved before its reflections are marked absorbed.
            if not self.dry_run:
                blob = Consolidated(
                    id=blob_id,
                    scope=ReflectionScope.SESSION,
                    partition=partition,
                    session_id=session_id,
                    content="\n".join(e[1] for e in kept),
                    word_limit=CONSOLIDATED_WORD_LIMIT["session"],
                    reflection_ids=[rid for rid in ids if rid in present or rid in new],
                    unabsorbed_ids=[],
                    last_consolidated_at=kept[-1][2],
                )
                if not await self._save_blob(blob):  # cannot happen: legacy ids are unique
                    raise AlfredError(f"session {session_id} already has a foreign blob")
                await self._remember(blob_id, "session_blob")
            if not blob_exists:
                self.report.written[CONSOLIDATED] += 1
            for rid, (legacy_id, content, created) in new.items():
                reflection = Reflection(
                    id=rid,
                    content=content,
                    scope=ReflectionScope.SESSION,
                    partition=partition,
                    session_id=session_id,
                    absorbed=True,
                    absorbed_into=blob_id,
                    created_at=created,
                )
                await self._write_reflection(reflection, EPISODE, legacy_id)

    # --- facts ------------------------------------------------------------------------

    async def import_facts(self) -> None:
        batch: list[Fact] = []
        planned_keys: set[tuple[str, str]] = set()  # (pkey, hash) seen in this run
        legacy_of: dict[str, str] = {}
        async for doc in self._raw(FACT):
            legacy_id = str(doc["_id"])
            content = clip_words(text_of(doc))
            if not content:
                self.report.skip(FACT, legacy_id, "empty")
                continue
            owners = self._owner(FACT, doc)
            if owners is None:
                continue
            legacy_owner, owner = owners
            created = first_date(doc, "createdAt", "created_at") or self.clock.now()
            fact = Fact(
                id=legacy_record_id(FACT, legacy_id, legacy_owner),
                content=content,
                hash=content_hash(content),
                category=Category.FACT,
                importance=5,
                partition=Partition.dm(owner),
                provenance=Provenance(source="import", speaker_id=owner),
                valid_at=created,
                subject_user_id=owner,
                created_at=created,
                updated_at=self.clock.now(),
            )
            legacy_of[fact.id] = legacy_id
            batch.append(fact)
            if len(batch) >= EMBED_BATCH:
                await self._store_facts(batch, planned_keys, legacy_of)
                batch = []
        if batch:
            await self._store_facts(batch, planned_keys, legacy_of)

    async def _store_facts(
        self, batch: list[Fact], planned: set[tuple[str, str]], legacy_of: dict[str, str]
    ) -> None:
        _present, existing = await self._known(FACTS, (f.id for f in batch))
        todo: list[Fact] = []
        for fact in batch:
            key = (fact.partition.key(), fact.hash)
            if fact.id in existing:
                self.report.skip(FACT, legacy_of[fact.id], "already_imported")
            elif key in planned or await self.db[FACTS].find_one(
                {"pkey": key[0], "hash": key[1], "current": True}, {"_id": 1}
            ):
                # In the ledger too: if the fact it duplicates is forgotten, this copy
                # must not come back on a later run.
                await self._remember(fact.id, FACT)
                self.report.skip(FACT, legacy_of[fact.id], "duplicate")
            else:
                planned.add(key)
                todo.append(fact)
        if not todo:
            return
        if self.dry_run:
            for _ in todo:
                self.report.ok(FACT)
                self.report.written[FACTS] += 1
            self.report.embedded += len(todo)
            return
        embedder = self.embedder
        if embedder is None:  # import_legacy refuses a real run without one
            raise ConfigurationError("the legacy import needs an embedder to store facts")
        vectors = await embedder.embed([f.content for f in todo])
        if vectors.shape != (len(todo), embedder.dimensions):
            raise ValueError(f"the embedder returned shape {vectors.shape} for {len(todo)} texts")
        self.report.embedded += len(todo)
        for fact, vector in zip(todo, vectors, strict=True):
            fact = fact.model_copy(
                update={
                    "embedding": [float(x) for x in vector],
                    "embedding_model": embedder.model_name,
                    "embedding_dims": embedder.dimensions,
                }
            )
            _stored, is_new = await self.facts.add(fact)
            await self._remember(fact.id, FACT)
            if is_new:
                self.report.ok(FACT)
                self.report.written[FACTS] += 1
            else:
                self.report.skip(FACT, legacy_of[fact.id], "duplicate")

    # --- agent scope ------------------------------------------------------------------

    async def import_suggestions(self) -> None:
        """A single user's suggestion → a user reflection in that user's DM (unabsorbed)."""
        planned: dict[str, tuple[str, str, str, datetime]] = {}
        async for doc in self._raw(SUGGESTION):
            legacy_id = str(doc["_id"])
            content = text_of(doc)
            if not content:
                self.report.skip(SUGGESTION, legacy_id, "empty")
                continue
            owners = self._owner(SUGGESTION, doc)
            if owners is None:
                continue
            legacy_owner, owner = owners
            created = first_date(doc, "createdAt", "created_at") or self.clock.now()
            rid = legacy_record_id(SUGGESTION, legacy_id, legacy_owner)
            planned[rid] = (legacy_id, owner, content, created)
        _present, known = await self._known(REFLECTIONS, planned)
        for rid, (legacy_id, owner, content, created) in planned.items():
            if rid in known:
                self.report.skip(SUGGESTION, legacy_id, "already_imported")
                continue
            reflection = Reflection(
                id=rid,
                content=content,
                scope=ReflectionScope.USER,
                partition=Partition.dm(owner),
                absorbed=False,
                created_at=created,
            )
            await self._write_reflection(reflection, SUGGESTION, legacy_id)

    async def skip_agent_shards(self) -> None:
        if LEGACY_AGENT in self.report.legacy_collections:
            async for doc in self.db[LEGACY_AGENT].find({}, {"_id": 1, "agent_id": 1}):
                self.report.seen(AGENT_SHARD)
                reason = "other_agent" if self._other_agent(doc) else "agent_scope"
                self.report.skip(AGENT_SHARD, str(doc["_id"]), reason)

    async def skip_unknown_types(self) -> None:
        if LEGACY_SESSIONS not in self.report.legacy_collections:
            return
        query = {"memory_type": {"$nin": [FACT, DIRECTIVE, EPISODE, SUGGESTION]}}
        async for doc in self.db[LEGACY_SESSIONS].find(query, {"_id": 1}):
            self.report.seen(UNKNOWN)
            self.report.skip(UNKNOWN, str(doc["_id"]), "unknown_type")

    async def _raw(self, kind: str) -> AsyncIterator[Document]:
        """The raw memories of one kind, oldest first; counts them and skips other agents."""
        if LEGACY_SESSIONS not in self.report.legacy_collections:
            return
        cursor = self.db[LEGACY_SESSIONS].find({"memory_type": kind}).sort("_id", 1)
        async for doc in cursor:
            self.report.seen(kind)
            if self._other_agent(doc):
                self.report.skip(kind, str(doc["_id"]), "other_agent")
                continue
            yield doc
