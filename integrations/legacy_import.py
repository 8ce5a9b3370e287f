"""Importing the previous generation of this memory system into Alfred's model.

Seed 002 ("Current System Reference") describes the previous generation: three
collections, and four kinds of raw memory. Its document shapes, which this module
reads, are those of that system's models (``SessionMemory``, ``UserMemory``,
``AgentMemory``)::

    memory_sessions  {_id, agent_id, source_session_id, memory_type, content,
                      source_message_ids, related_users: [user ids], shard_id,
                      agent_owner, createdAt}
                     memory_type ∈ episode | directive | fact | suggestion
    memory_user      {_id, agent_id, user_id, content (the consolidated blob),
                      unabsorbed_memory_ids: [directive ids], last_updated_at}
    memory_agent     {_id, agent_id, shard_name, extraction_prompt, is_active, content,
                      unabsorbed_memory_ids: [suggestion ids], facts: [fact ids],
                      fully_formed_memory_shard, last_updated_at}

The mapping (seed 002's table, constrained by DESIGN.md §3):

===========================  =================================================  ==========
legacy                       Alfred                                             partition
===========================  =================================================  ==========
fact                         fact (embedded with the given embedder)            owner's DM
directive                    user-scope reflection; absorbed into the imported  owner's DM
                             user blob if the legacy blob had absorbed it
episode                      session-scope reflection of session               owner's DM
                             ``legacy:<session id>``, plus that session's blob
                             (the episodes in order: what the old system showed)
memory_user blob             user-scope consolidated blob                       owner's DM
suggestion                   user-scope reflection, unabsorbed (consolidation   owner's DM
                             merges it into the owner's user blob)
memory_agent shard           **skipped**: see below
===========================  =================================================  ==========

Why the owner's DM: the legacy data has no circles and no notion of who else may see
a memory, so the only partition that cannot show a memory to someone who should not
see it is the private one of the single user it belongs to (DESIGN.md §3's third row).
A memory is owned by the single user in its ``related_users`` (a directive: by the
user whose blob lists it as unabsorbed). A memory related to several users, or to
none, has no safe partition and is skipped with a reason. Episodes were session-scoped
in the old system; their session is over, so their reflections are stored already
absorbed into the session's blob and never trigger a consolidation (no LLM cost), and
a ``legacy:`` session id is never current, so they are kept (export, audit, "forget")
rather than shown.

Suggestions: the old system's *agent*-scope notes, extracted from one conversation and
then shown to every user of the bot. Alfred has no agent partition (DESIGN.md §3 allows
shared memory only when an operator writes it: extracted shared memory leaks between
tenants), so a suggestion is never imported as shared. It is imported only where it
came from: a suggestion related to a single user came from that user's conversation,
so it becomes a user-scope reflection in that user's DM, seen by nobody else (fewer
people than the old system showed it to, never more). Unabsorbed, so the next
consolidation merges it into that user's blob. Related to several users or none, it
is skipped like any memory.

Why agent shards are skipped: a shard's blob (``memory_agent.content``) is merged from
every user's suggestions; it cannot be split back into who said what, so no private
partition can hold it. Shards are counted and listed by id in the report so an
operator can read them in the legacy collection and re-author what is worth keeping
(as operator-written memory). (A shard's ``facts`` are ``memory_sessions`` facts, and
its unabsorbed ids are suggestions: both are imported on their own rows, under the
rules above.)

Users: legacy user ids are the old system's ids; Alfred's are Telegram user ids. Each
legacy id is resolved by, in order: the ``user_map`` argument, the ``legacy_user_map``
collection (``{_id: legacy id, user_id: Alfred id}``), and a legacy id made only of
digits (already a Telegram id). Anything else is skipped as ``unmapped_user``: a memory
stored under an id no Telegram user has would be invisible and escape erasure.

Idempotent: every imported record's id is derived from its legacy id (and its legacy
owner), and every id written is also entered in ``legacy_import_ledger`` (ids and kinds
only, no content). A second run skips what it finds in either as ``already_imported``,
so a memory a user made Alfred forget since is not brought back from the legacy
collections. Facts are also deduplicated per partition by content hash, like any fact.
Dry run reads only: no write, no collection created, no embedding call (it may cost
money).

The legacy collections are not modified or dropped: they are outside Alfred's forget
cascade, so an operator should drop them (:func:`drop_legacy_collections`) once the
import is checked. Nothing here logs content: only ids and counts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from bson import ObjectId
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from integrations.mongo.codec import consolidated_to_doc
from integrations.mongo.facts import MongoFactStore
from integrations.mongo.notes import MongoNotes
from memory.constants import (
    CONSOLIDATED,
    CONSOLIDATED_WORD_LIMIT,
    FACTS,
    PARTITIONS,
    REFLECTIONS,
)
from memory.errors import AlfredError
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

log = logging.getLogger(__name__)

Document = dict[str, Any]
Db = AsyncDatabase[Document]

LEGACY_SESSIONS: Final = "memory_sessions"
LEGACY_USER: Final = "memory_user"
LEGACY_AGENT: Final = "memory_agent"
LEGACY_COLLECTIONS: Final = (LEGACY_SESSIONS, LEGACY_USER, LEGACY_AGENT)
#: Optional operator-filled table: legacy user id → Alfred (Telegram) user id.
LEGACY_USER_MAP: Final = "legacy_user_map"
#: The ids of every record an import wrote (derived ids and kinds, no content), so a
#: memory forgotten since is never imported again from the legacy collections.
LEGACY_LEDGER: Final = "legacy_import_ledger"

#: Facts embedded per embedder call: large enough to amortise a network round trip,
#: small enough that one failure costs little.
EMBED_BATCH: Final = 64
#: Skipped items listed by legacy id in the report (the counts are always complete).
MAX_SAMPLES: Final = 200

# Kinds (report keys).
FACT: Final = "fact"
DIRECTIVE: Final = "directive"
EPISODE: Final = "episode"
SUGGESTION: Final = "suggestion"
USER_BLOB: Final = "user_blob"
AGENT_SHARD: Final = "agent_shard"
UNKNOWN: Final = "unknown_type"
KINDS: Final = (FACT, DIRECTIVE, EPISODE, USER_BLOB, SUGGESTION, AGENT_SHARD, UNKNOWN)

#: Why an item was skipped, for the report.
REASONS: Final = {
    "already_imported": "imported by an earlier run (same legacy id)",
    "duplicate": "the same fact already exists in that partition",
    "no_owner": "no related user: no private partition to put it in",
    "several_owners": "several related users and no circles in legacy data: no partition "
    "is private to all of them",
    "unmapped_user": "legacy user id has no Alfred (Telegram) user id: map it (legacy_user_map "
    "collection or --legacy-user-map) and run `alfred migrate --legacy-import`",
    "empty": "no content",
    "agent_scope": "an agent shard's blob is merged from every user's conversations, so no "
    "private partition can hold it, and only operators write shared memory (DESIGN.md §3)",
    "other_agent": "belongs to another legacy agent than the one imported",
    "partition_has_blob": "the user already has a consolidated blob; its reflections are "
    "imported unabsorbed so the next consolidation merges them",
    "unknown_type": "memory_type is not episode, directive, fact or suggestion",
}


class LegacyDryRunFinished(AlfredError):
    """Raised by migration 0004 after a dry run, so the migrator does not record it as
    applied (a dry run must leave the migration pending)."""

    def __init__(self, report: ImportReport) -> None:
        super().__init__(
            "legacy import dry run finished: nothing was written",
            hint="run `alfred migrate` without the dry-run flag to import",
        )
        self.report = report


@dataclass
class KindReport:
    """Counts for one legacy kind."""

    seen: int = 0
    imported: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {"seen": self.seen, "imported": self.imported, "skipped": dict(self.skipped)}


@dataclass(frozen=True)
class SkippedItem:
    """One skipped legacy record, by id (never by content)."""

    kind: str
    legacy_id: str
    reason: str


@dataclass
class ImportReport:
    """What an import did (or, in a dry run, would do): per kind, counts and reasons."""

    dry_run: bool
    legacy_collections: list[str] = field(default_factory=list)
    kinds: dict[str, KindReport] = field(default_factory=lambda: {k: KindReport() for k in KINDS})
    #: Records written per target collection (in a dry run: that would be written).
    written: Counter[str] = field(default_factory=Counter)
    embedded: int = 0
    samples: list[SkippedItem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.legacy_collections)

    @property
    def imported(self) -> int:
        return sum(k.imported for k in self.kinds.values())

    @property
    def skipped(self) -> int:
        return sum(sum(k.skipped.values()) for k in self.kinds.values())

    def seen(self, kind: str) -> None:
        self.kinds[kind].seen += 1

    def ok(self, kind: str) -> None:
        self.kinds[kind].imported += 1

    def skip(self, kind: str, legacy_id: str, reason: str) -> None:
        self.kinds[kind].skipped[reason] += 1
        if len(self.samples) < MAX_SAMPLES:
            self.samples.append(SkippedItem(kind, legacy_id, reason))

    def lines(self) -> list[str]:
        """The report for a person: one line per kind, then what was written, then why."""
        mode = "dry run, nothing written" if self.dry_run else "applied"
        if not self.found:
            return [f"legacy import ({mode}): no legacy collections found; nothing to import"]
        verb = "would import" if self.dry_run else "imported"
        out = [f"legacy import ({mode}): found {', '.join(self.legacy_collections)}"]
        reasons: set[str] = set()
        for kind in KINDS:
            k = self.kinds[kind]
            if not k.seen:
                continue
            skipped = ", ".join(f"{r} {n}" for r, n in sorted(k.skipped.items()))
            reasons |= set(k.skipped)
            tail = f", skipped {sum(k.skipped.values())} ({skipped})" if k.skipped else ""
            out.append(f"  {kind}: {k.seen} seen, {verb} {k.imported}{tail}")
        written = ", ".join(f"{n} {c}" for c, n in sorted(self.written.items())) or "nothing"
        embed = "to embed" if self.dry_run else "embedded"
        out.append(
            f"  {'would write' if self.dry_run else 'wrote'}: {written} ({self.embedded} "
            f"fact(s) {embed})"
        )
        for reason in sorted(reasons):
            out.append(f"  {reason}: {REASONS.get(reason, reason)}")
        out.extend(f"  note: {n}" for n in self.notes)
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "legacy_collections": self.legacy_collections,
            "kinds": {k: v.as_dict() for k, v in self.kinds.items()},
            "written": dict(self.written),
            "embedded": self.embedded,
            "skipped_samples": [s.__dict__ for s in self.samples],
            "notes": self.notes,
        }


# --- helpers ---------------------------------------------------------------------------


def legacy_record_id(kind: str, legacy_id: str, legacy_owner: str | None) -> str:
    """The Alfred id of an imported record: the same legacy record (and owner) always
    gives the same id, which is what makes a second run a no-op."""
    key = f"legacy|{kind}|{legacy_id}|{legacy_owner or '-'}"
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def legacy_session_id(legacy_session: str) -> str:
    """The Alfred session id of a legacy session: never equal to a live session's."""
    return f"legacy:{legacy_session}"


def _sid(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return str(value)


def _when(doc: Document, *keys: str) -> datetime | None:
    for key in keys:
        value = doc.get(key)
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=UTC)
    oid = doc.get("_id")
    if isinstance(oid, ObjectId):
        return oid.generation_time
    return None


def _related(doc: Document) -> list[str]:
    """The distinct legacy users a raw memory relates to."""
    related = doc.get("related_users") or []
    if not isinstance(related, list):
        related = [related]
    if not related and doc.get("user_id") is not None:
        related = [doc["user_id"]]
    out: list[str] = []
    for user in related:
        sid = _sid(user)
        if sid is not None and sid not in out:
            out.append(sid)
    return out


def _text(doc: Document, key: str = "content") -> str:
    value = doc.get(key)
    return " ".join(value.split()) if isinstance(value, str) else ""


class UserResolver:
    """Legacy user id → Alfred user id (see the module docstring for the order)."""

    def __init__(self, explicit: Mapping[str, str] | None, table: Mapping[str, str]) -> None:
        self.explicit = {str(k): str(v) for k, v in (explicit or {}).items()}
        self.table = dict(table)

    def __call__(self, legacy_user: str) -> str | None:
        if legacy_user in self.explicit:
            return self.explicit[legacy_user]
        if legacy_user in self.table:
            return self.table[legacy_user]
        if legacy_user.lstrip("-").isdigit():
            return legacy_user
        return None


async def _load_user_table(db: Db) -> dict[str, str]:
    if LEGACY_USER_MAP not in set(await db.list_collection_names()):
        return {}
    table: dict[str, str] = {}
    async for doc in db[LEGACY_USER_MAP].find({}):
        target = _sid(doc.get("user_id"))
        if target is not None:
            table[str(doc["_id"])] = target
    return table


def load_user_map(path: Path) -> dict[str, str]:
    """Read a user map file: a JSON object ``{"<legacy user id>": <telegram user id>}``."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("a user map is a JSON object of legacy id → Telegram user id")
    return {str(k): str(v) for k, v in data.items()}


async def legacy_collections_present(db: Db) -> list[str]:
    """The legacy collections this database holds, in a fixed order."""
    names = set(await db.list_collection_names())
    return [name for name in LEGACY_COLLECTIONS if name in names]


async def drop_legacy_collections(db: Db) -> list[str]:
    """Drop the legacy collections (after a checked import): they are outside the
    forget cascade, so keeping them would keep forgotten text. Returns those dropped."""
    present = await legacy_collections_present(db)
    for name in present:
        await db.drop_collection(name)
    return present


async def _existing_ids(db: Db, collection: str, ids: Iterable[str]) -> set[str]:
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return set()
    cursor = db[collection].find({"_id": {"$in": wanted}}, {"_id": 1})
    return {str(d["_id"]) async for d in cursor}


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


class _Importer:
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
        present = await _existing_ids(self.db, collection, wanted)
        return present, present | await _existing_ids(self.db, LEGACY_LEDGER, wanted)

    async def _remember(self, record_id: str, kind: str) -> None:
        """Enter a written (or deliberately not written) record in the ledger."""
        if self.dry_run:
            return
        await self.db[LEGACY_LEDGER].update_one(
            {"_id": record_id},
            {"$setOnInsert": {"kind": kind, "at": self.clock.now()}},
            upsert=True,
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
        return self.agent_id is not None and _sid(doc.get("agent_id")) != self.agent_id

    def _owner(self, kind: str, doc: Document) -> tuple[str, str] | None:
        """(legacy owner, Alfred owner) of a raw memory, or None (skip recorded)."""
        legacy_id = str(doc["_id"])
        related = _related(doc)
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
            legacy_owner = _sid(doc.get("user_id"))
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
                    agent=_sid(doc.get("agent_id")),
                    legacy_owner=legacy_owner,
                    owner=owner,
                    content=_text(doc),
                    updated_at=_when(doc, "last_updated_at", "updatedAt", "createdAt")
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
            content = _text(doc)
            if not content:
                self.report.skip(DIRECTIVE, legacy_id, "empty")
                continue
            created = _when(doc, "createdAt", "created_at") or self.clock.now()
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
            agent = _sid(doc.get("agent_id"))
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
        await self.db[PARTITIONS].update_one(
            {"_id": blob.partition.key()},
            {"$inc": {"notes_version": 1}, "$setOnInsert": blob.partition.as_fields()},
            upsert=True,
        )
        return True

    # --- episodes ---------------------------------------------------------------------

    async def import_episodes(self) -> None:
        groups: dict[tuple[str, str, str], list[tuple[str, str, datetime]]] = {}
        async for doc in self._raw(EPISODE):
            legacy_id = str(doc["_id"])
            content = _text(doc)
            if not content:
                self.report.skip(EPISODE, legacy_id, "empty")
                continue
            owners = self._owner(EPISODE, doc)
            if owners is None:
                continue
            session = _sid(doc.get("source_session_id")) or f"unknown-{legacy_id}"
            created = _when(doc, "createdAt", "created_at") or self.clock.now()
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
            content = clip_words(_text(doc))
            if not content:
                self.report.skip(FACT, legacy_id, "empty")
                continue
            owners = self._owner(FACT, doc)
            if owners is None:
                continue
            legacy_owner, owner = owners
            created = _when(doc, "createdAt", "created_at") or self.clock.now()
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
        assert self.embedder is not None  # import_legacy refuses a real run without one
        vectors = await self.embedder.embed([f.content for f in todo])
        if vectors.shape != (len(todo), self.embedder.dimensions):
            raise ValueError(f"the embedder returned shape {vectors.shape} for {len(todo)} texts")
        self.report.embedded += len(todo)
        for fact, vector in zip(todo, vectors, strict=True):
            fact = fact.model_copy(
                update={
                    "embedding": [float(x) for x in vector],
                    "embedding_model": self.embedder.model_name,
                    "embedding_dims": self.embedder.dimensions,
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
            content = _text(doc)
            if not content:
                self.report.skip(SUGGESTION, legacy_id, "empty")
                continue
            owners = self._owner(SUGGESTION, doc)
            if owners is None:
                continue
            legacy_owner, owner = owners
            created = _when(doc, "createdAt", "created_at") or self.clock.now()
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


async def import_legacy(
    db: Db,
    *,
    dry_run: bool,
    embedder: Embedder | None,
    clock: Clock,
    user_map: Mapping[str, str] | None = None,
    agent_id: str | None = None,
) -> ImportReport:
    """Import the legacy collections of ``db`` into Alfred's collections of ``db``.

    ``dry_run`` only reads and reports what would happen (``embedder`` may then be
    None: nothing is embedded). ``user_map`` maps legacy user ids to Alfred user ids
    (see :class:`UserResolver`); ``agent_id`` limits the import to one legacy agent,
    for a legacy database that served several. Safe to run again: records already
    imported are skipped. Never logs content.
    """
    if not dry_run and embedder is None:
        raise ValueError("a real import needs an embedder (facts are embedded as they land)")
    report = ImportReport(dry_run=dry_run)
    report.legacy_collections = await legacy_collections_present(db)
    if not report.found:
        report.notes.append("no legacy collections; nothing to import")
        return report
    users = UserResolver(user_map, await _load_user_table(db))
    importer = _Importer(
        db,
        dry_run=dry_run,
        embedder=embedder,
        clock=clock,
        users=users,
        agent_id=agent_id,
        report=report,
    )
    await importer.import_user_blobs_and_directives()
    await importer.import_episodes()
    await importer.import_facts()
    await importer.import_suggestions()
    await importer.skip_agent_shards()
    await importer.skip_unknown_types()
    report.notes.append(
        "legacy collections were left as they are; they are outside the forget cascade: "
        "drop them once the import is checked (drop_legacy_collections)"
    )
    log.info(
        "legacy import %s: %d imported, %d skipped",
        "dry run" if dry_run else "applied",
        report.imported,
        report.skipped,
    )
    if not dry_run:
        _export_metrics(report)
    return report


def _export_metrics(report: ImportReport) -> None:
    try:
        from runtime.metrics import get_metrics

        metrics = get_metrics()
        for kind, counts in report.kinds.items():
            if counts.imported:
                metrics.legacy_imported.labels(kind=kind).inc(counts.imported)
    except Exception as exc:  # metrics never fail an import
        log.warning("exporting legacy import metrics failed (%s)", type(exc).__name__)


# --- the CLI-facing entry point --------------------------------------------------------


async def run_legacy_import(
    settings: Any,
    *,
    dry_run: bool,
    user_map: Mapping[str, str] | None = None,
    agent_id: str | None = None,
    emit: Callable[[str], None] = print,
    wait_seconds: float | None = None,
) -> ImportReport:
    """``alfred migrate --legacy-dry-run`` and ``alfred migrate --legacy-import``.

    Connects with ``settings`` (an :class:`runtime.settings.Settings`), runs
    :func:`import_legacy`, prints the report line by line through ``emit`` and closes.
    A dry run never loads the embedding model and never touches ``schema_migrations``,
    so migration 0004 stays pending. A real run requires migration 0001 (the unique
    indexes that make dedup and idempotency safe) to be applied, and holds the
    migration lock (waiting up to ``wait_seconds``), so it never runs alongside
    ``alfred migrate`` or a bot applying 0004 at start-up. It can run any number of
    times: what an earlier run (or migration 0004) imported is counted as
    ``already_imported``, never written twice; run it after mapping users that were
    skipped as ``unmapped_user``.
    """
    from integrations.mongo.migrator import LOCK_WAIT_SECONDS, MigrationLock, status
    from memory.clock import SystemClock
    from memory.errors import ConfigurationError
    from runtime.connections import open_mongo

    handle = await open_mongo(settings)
    try:
        embedder: Embedder | None = None
        if not dry_run:
            if 1 not in (await status(handle.db)).applied:
                raise ConfigurationError(
                    "the database has no schema yet", hint="run `alfred migrate` first"
                )
            from runtime.builders import build_embedder

            embedder = build_embedder(settings)
        async with contextlib.AsyncExitStack() as stack:
            if not dry_run:
                wait = LOCK_WAIT_SECONDS if wait_seconds is None else wait_seconds
                await stack.enter_async_context(MigrationLock(handle.db, wait_seconds=wait))
            report = await import_legacy(
                handle.db,
                dry_run=dry_run,
                embedder=embedder,
                clock=SystemClock(),
                user_map=user_map,
                agent_id=agent_id,
            )
        for line in report.lines():
            emit(line)
        return report
    finally:
        await handle.close()


__all__ = [
    "LEGACY_AGENT",
    "LEGACY_COLLECTIONS",
    "LEGACY_LEDGER",
    "LEGACY_SESSIONS",
    "LEGACY_USER",
    "LEGACY_USER_MAP",
    "REASONS",
    "ImportReport",
    "KindReport",
    "LegacyDryRunFinished",
    "SkippedItem",
    "UserResolver",
    "drop_legacy_collections",
    "import_legacy",
    "legacy_collections_present",
    "legacy_record_id",
    "legacy_session_id",
    "load_user_map",
    "run_legacy_import",
]
