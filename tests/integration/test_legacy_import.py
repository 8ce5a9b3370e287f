"""Importing the previous memory system (seed 002) into the real embedded database.

A legacy data set in the old shapes (``memory_sessions`` with episodes, directives,
facts and suggestions; ``memory_user`` blobs; ``memory_agent`` shards) is written, then
imported: a dry run reports and writes nothing, a real run lands every importable
memory in its owner's DM partition with embeddings, and a second run adds nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from bson import ObjectId
from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.codec import vector_from_bson
from integrations.mongo.facts import MongoFactStore
from integrations.mongo.notes import MongoNotes
from memory.clock import ManualClock
from memory.constants import CONSOLIDATED, FACTS, PARTITIONS, REFLECTIONS
from memory.models import Partition, ReflectionScope, Thread, ThreadKind, Viewer
from migrations import MigrationContext, migrate, status
from migrations.legacy_import import (
    LEGACY_AGENT,
    LEGACY_LEDGER,
    LEGACY_SESSIONS,
    LEGACY_USER,
    LEGACY_USER_MAP,
    ImportReport,
    LegacyDryRunFinished,
    drop_legacy_collections,
    import_legacy,
    legacy_session_id,
)
from tests.helpers.fakes import HashEmbedder

Db = AsyncDatabase[dict[str, Any]]
T0 = datetime(2025, 11, 3, 9, 0, tzinfo=UTC)
NOW = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)
TARGETS = (FACTS, REFLECTIONS, CONSOLIDATED, PARTITIONS)

AGENT = ObjectId()
OTHER_AGENT = ObjectId()
# u1 is mapped by the legacy_user_map collection, u2 by the user_map argument, u3's id
# is already a Telegram id, u4 is mapped by nothing.
U1, U2, U4 = ObjectId(), ObjectId(), ObjectId()
U3 = "1003"
USER_MAP = {str(U2): "1002"}
S1, S2, S3, S4 = ObjectId(), ObjectId(), ObjectId(), ObjectId()


class LegacyData:
    """Builds the legacy collections and remembers the ids the assertions need."""

    def __init__(self) -> None:
        self.sessions: list[dict[str, Any]] = []
        self.ids: dict[str, ObjectId] = {}
        self.minute = 0

    def raw(
        self,
        name: str,
        memory_type: str,
        content: str,
        session: ObjectId,
        related: list[Any],
        *,
        agent: ObjectId = AGENT,
    ) -> ObjectId:
        oid = ObjectId()
        self.minute += 1
        self.sessions.append(
            {
                "_id": oid,
                "agent_id": agent,
                "source_session_id": session,
                "memory_type": memory_type,
                "content": content,
                "source_message_ids": [ObjectId()],
                "related_users": related,
                "shard_id": None,
                "agent_owner": ObjectId(),
                "createdAt": T0 + timedelta(minutes=self.minute),
                "updatedAt": T0 + timedelta(minutes=self.minute),
            }
        )
        self.ids[name] = oid
        return oid


def build_legacy() -> tuple[LegacyData, list[dict[str, Any]], list[dict[str, Any]]]:
    d = LegacyData()
    # Episodes: two private sessions, one shared (two users), one with an unmapped user.
    d.raw("e1a", "episode", "We planned the trip to Lisbon, flights still open.", S1, [U1])
    d.raw("e1b", "episode", "Booked the flights; next is the hotel.", S1, [U1])
    d.raw("e1c", "episode", "Hotel chosen near Alfama.", S1, [U1])
    d.raw("e2a", "episode", "Drafting a birthday speech for Dana.", S2, [U2])
    d.raw("e2b", "episode", "Speech finished, wants it funnier.", S2, [U2])
    d.raw("e3", "episode", "Both argued about the budget.", S3, [U1, U2])
    d.raw("e4", "episode", "Something with an unknown person.", S4, [U4])
    # Directives: d1 absorbed in u1's legacy blob, d2 listed there as unabsorbed, d3 u2's
    # (no legacy blob), d4 related to nobody.
    d.raw("d1", "directive", "Prefers short answers in the morning.", S1, [U1])
    d.raw("d2", "directive", "Wants metric units always.", S1, [U1])
    d.raw("d3", "directive", "Reply in Spanish.", S2, [U2])
    d.raw("d4", "directive", "Never use emojis.", S3, [])
    # Facts.
    d.raw("f1", "fact", "Alice is allergic to shellfish.", S1, [U1])
    d.raw("f2", "fact", "Alice's sister lives in Porto.", S1, [U1])
    d.raw("f3", "fact", "Bob runs a bakery on Main Street.", S2, [U2])
    d.raw("f4", "fact", "They share a savings account.", S3, [U1, U2])
    d.raw("f5", "fact", "Carol plays the cello.", S4, [U3])
    d.raw("f6", "fact", "alice is allergic to shellfish", S1, [U1])  # same fact as f1
    d.raw("f7", "fact", "   ", S1, [U1])
    # Suggestions (the old agent scope): g1 and g2 from one user's conversation each, g3
    # from a conversation of two.
    d.raw("g1", "suggestion", "Users like travel tips.", S1, [U1])
    d.raw("g2", "suggestion", "Offer recipes more often.", S2, [U2])
    d.raw("g3", "suggestion", "Everyone enjoys the weekly quiz.", S3, [U1, U2])
    d.raw("x1", "summary", "An unknown memory type.", S1, [U1])
    users = [
        {
            "_id": ObjectId(),
            "agent_id": AGENT,
            "user_id": U1,
            "content": "Alice likes concise replies and plans trips carefully.",
            "unabsorbed_memory_ids": [d.ids["d2"]],
            "last_updated_at": T0 + timedelta(days=1),
        },
        {
            "_id": ObjectId(),
            "agent_id": AGENT,
            "user_id": U4,
            "content": "Someone we cannot map.",
            "unabsorbed_memory_ids": [],
            "last_updated_at": T0,
        },
    ]
    shards = [
        {
            "_id": ObjectId(),
            "agent_id": AGENT,
            "shard_name": name,
            "extraction_prompt": "Extract what matters for the project.",
            "is_active": True,
            "content": f"Collective memory of {name}.",
            "unabsorbed_memory_ids": [d.ids["g1"]],
            "facts": [d.ids["f1"]],
            "fully_formed_memory_shard": "…",
            "last_updated_at": T0,
        }
        for name in ("launch", "events")
    ]
    return d, users, shards


@pytest.fixture
async def legacy(migrated_db: Db) -> LegacyData:
    data, users, shards = build_legacy()
    await migrated_db[LEGACY_SESSIONS].insert_many(data.sessions)
    await migrated_db[LEGACY_USER].insert_many(users)
    await migrated_db[LEGACY_AGENT].insert_many(shards)
    await migrated_db[LEGACY_USER_MAP].insert_one({"_id": str(U1), "user_id": 1001})
    return data


async def counts(db: Db) -> dict[str, int]:
    return {name: await db[name].count_documents({}) for name in TARGETS}


def dm_viewer(user_id: str) -> Viewer:
    return Viewer(user_id=user_id, thread=Thread(id=user_id, kind=ThreadKind.DM, user_id=user_id))


def check_counts(report: ImportReport) -> None:
    """The per-kind counts and reasons expected of the data set above (first run)."""
    k = {kind: v.as_dict() for kind, v in report.kinds.items()}
    assert k["fact"] == {
        "seen": 7,
        "imported": 4,
        "skipped": {"several_owners": 1, "duplicate": 1, "empty": 1},
    }
    assert k["directive"] == {"seen": 4, "imported": 3, "skipped": {"no_owner": 1}}
    assert k["episode"] == {
        "seen": 7,
        "imported": 5,
        "skipped": {"several_owners": 1, "unmapped_user": 1},
    }
    assert k["user_blob"] == {"seen": 2, "imported": 1, "skipped": {"unmapped_user": 1}}
    assert k["suggestion"] == {"seen": 3, "imported": 2, "skipped": {"several_owners": 1}}
    assert k["agent_shard"] == {"seen": 2, "imported": 0, "skipped": {"agent_scope": 2}}
    assert k["unknown_type"] == {"seen": 1, "imported": 0, "skipped": {"unknown_type": 1}}
    # 4 facts; 3 directives + 5 episodes + 2 suggestions; u1's blob and the two session blobs.
    assert dict(report.written) == {FACTS: 4, REFLECTIONS: 10, CONSOLIDATED: 3}
    assert report.embedded == 4


async def test_dry_run_reports_everything_and_writes_nothing(
    migrated_db: Db, legacy: LegacyData
) -> None:
    before = await counts(migrated_db)
    names_before = set(await migrated_db.list_collection_names())
    embedder = HashEmbedder()

    report = await import_legacy(
        migrated_db, dry_run=True, embedder=embedder, clock=ManualClock(NOW), user_map=USER_MAP
    )

    assert report.dry_run and report.found
    assert report.legacy_collections == [LEGACY_SESSIONS, LEGACY_USER, LEGACY_AGENT]
    check_counts(report)
    assert await counts(migrated_db) == before == dict.fromkeys(TARGETS, 0)
    assert set(await migrated_db.list_collection_names()) == names_before
    assert embedder.calls == 0  # a dry run never pays for embeddings
    text = "\n".join(report.lines())
    assert "dry run, nothing written" in text and "would import 4" in text
    assert "several_owners:" in text and "agent_scope:" in text
    # Skipped items are listed by legacy id only, never by content.
    assert ("fact", str(legacy.ids["f4"]), "several_owners") in {
        (s.kind, s.legacy_id, s.reason) for s in report.samples
    }
    assert "shellfish" not in repr(report.as_dict())


async def test_import_lands_in_private_partitions_with_embeddings(
    migrated_db: Db, legacy: LegacyData
) -> None:
    embedder = HashEmbedder()
    report = await import_legacy(
        migrated_db, dry_run=False, embedder=embedder, clock=ManualClock(NOW), user_map=USER_MAP
    )
    check_counts(report)
    assert await counts(migrated_db) == {
        FACTS: 4,
        REFLECTIONS: 10,
        CONSOLIDATED: 3,
        PARTITIONS: 3,  # the DMs of 1001, 1002 and 1003
    }

    # Facts: in their owner's DM, embedded with the given model, timestamps preserved.
    facts = {d["content"]: d async for d in migrated_db[FACTS].find({})}
    assert set(facts) == {
        "Alice is allergic to shellfish.",
        "Alice's sister lives in Porto.",
        "Bob runs a bakery on Main Street.",
        "Carol plays the cello.",
    }
    owners = {c: (d["visibility"], d["circle_id"], d["owner_user_id"]) for c, d in facts.items()}
    assert owners["Alice is allergic to shellfish."] == ("dm", None, "1001")
    assert owners["Bob runs a bakery on Main Street."] == ("dm", None, "1002")
    assert owners["Carol plays the cello."] == ("dm", None, "1003")
    for doc in facts.values():
        vector = vector_from_bson(doc["embedding"])
        assert vector is not None and len(vector) == embedder.dimensions
        assert doc["embedding_model"] == embedder.model_name
        assert doc["provenance"]["source"] == "import"
        assert doc["current"] is True
    shellfish = facts["Alice is allergic to shellfish."]
    assert shellfish["created_at"] == shellfish["valid_at"] < NOW

    # What each user sees in their DM, through the stores' privacy-filtered reads.
    store, notes = MongoFactStore(migrated_db), MongoNotes(migrated_db)
    alice = dm_viewer("1001")
    assert {f.content for f in await store.list_visible(alice)} == {
        "Alice is allergic to shellfish.",
        "Alice's sister lives in Porto.",
    }
    assert {f.content for f in await store.list_visible(dm_viewer("1002"))} == {
        "Bob runs a bakery on Main Street."
    }
    group = Thread(id="-100", kind=ThreadKind.GROUP, circle_id="-100")
    in_group = Viewer(user_id="1001", thread=group, circle_ids=frozenset({"-100"}))
    assert await store.list_visible(in_group) == []  # DM memories never reach a group

    # Directives: d2 buffered (unabsorbed) for Alice, d1 absorbed into her imported blob;
    # her own suggestion buffered beside it.
    visible = await notes.visible_reflections(alice, session_id=None)
    assert [r.content for r in visible] == ["Wants metric units always.", "Users like travel tips."]
    blobs = await notes.visible_blobs(alice, session_id=None)
    assert len(blobs) == 1 and blobs[0].scope is ReflectionScope.USER
    assert blobs[0].content.startswith("Alice likes concise replies")
    absorbed = await migrated_db[REFLECTIONS].find_one(
        {"content": "Prefers short answers in the morning."}
    )
    assert absorbed is not None
    assert absorbed["absorbed"] is True and absorbed["absorbed_into"] == blobs[0].id
    assert blobs[0].reflection_ids == [absorbed["_id"]]
    bob_reflections = await notes.visible_reflections(dm_viewer("1002"), session_id=None)
    assert [r.content for r in bob_reflections] == [
        "Reply in Spanish.",
        "Offer recipes more often.",
    ]
    assert await notes.visible_blobs(dm_viewer("1002"), session_id=None) == []

    # Episodes: session reflections of the legacy session, absorbed into its blob.
    session = legacy_session_id(str(S1))
    episodes = [
        d async for d in migrated_db[REFLECTIONS].find({"scope": "session", "session_id": session})
    ]
    assert len(episodes) == 3
    assert all(e["absorbed"] and e["owner_user_id"] == "1001" for e in episodes)
    session_blob = await notes.blob(ReflectionScope.SESSION, Partition.dm("1001"), session)
    assert session_blob is not None
    assert session_blob.content.splitlines() == [
        "We planned the trip to Lisbon, flights still open.",
        "Booked the flights; next is the hotel.",
        "Hotel chosen near Alfama.",
    ]
    assert {e["absorbed_into"] for e in episodes} == {session_blob.id}
    # Nothing is left buffered for consolidation to spend LLM calls on but the two
    # unabsorbed directives and the two suggestions (one of each per user).
    assert sorted(n for *_, n in await notes.buffered_groups()) == [2, 2]

    # Nothing from the agent shards, the shared sessions or the unmapped user arrived.
    everything = " ".join(
        [str(d.get("content")) async for d in migrated_db[REFLECTIONS].find({})]
        + [str(d.get("content")) async for d in migrated_db[CONSOLIDATED].find({})]
        + list(facts)
    )
    for absent in (
        "Collective memory",
        "weekly quiz",
        "budget",
        "savings",
        "unknown person",
        "cannot map",
        "emojis",
    ):
        assert absent not in everything


async def test_a_suggestion_reaches_only_its_own_users_dm(
    migrated_db: Db, legacy: LegacyData
) -> None:
    """The old system showed suggestions to everyone; Alfred shows one only to the single
    user whose conversation it came from, in that user's DM: never in a group, never in
    another member's DM or another circle, never as circle-level or shared memory."""
    await import_legacy(
        migrated_db,
        dry_run=False,
        embedder=HashEmbedder(),
        clock=ManualClock(NOW),
        user_map=USER_MAP,
    )
    stored = {
        d["content"]: d
        async for d in migrated_db[REFLECTIONS].find(
            {"content": {"$in": ["Users like travel tips.", "Offer recipes more often."]}}
        )
    }
    assert {
        c: (d["scope"], d["visibility"], d["circle_id"], d["owner_user_id"])
        for c, d in stored.items()
    } == {
        "Users like travel tips.": ("user", "dm", None, "1001"),
        "Offer recipes more often.": ("user", "dm", None, "1002"),
    }
    assert all(d["absorbed"] is False for d in stored.values())

    notes = MongoNotes(migrated_db)

    async def seen_by(viewer: Viewer) -> set[str]:
        texts = {r.content for r in await notes.visible_reflections(viewer, session_id=None)}
        texts |= {b.content for b in await notes.visible_blobs(viewer, session_id=None)}
        return texts

    alice, bob = dm_viewer("1001"), dm_viewer("1002")
    assert "Users like travel tips." in await seen_by(alice)
    assert "Offer recipes more often." not in await seen_by(alice)
    assert "Offer recipes more often." in await seen_by(bob)
    assert "Users like travel tips." not in await seen_by(bob)
    # Alice and Bob share a circle: in its group neither suggestion shows, to either.
    fam = Thread(id="-100", kind=ThreadKind.GROUP, circle_id="-100")
    for user in ("1001", "1002"):
        in_group = Viewer(user_id=user, thread=fam, circle_ids=frozenset({"-100", "-200"}))
        assert not (await seen_by(in_group)) & set(stored), user
    other = Thread(id="-200", kind=ThreadKind.GROUP, circle_id="-200")
    elsewhere = Viewer(user_id="1001", thread=other, circle_ids=frozenset({"-100", "-200"}))
    assert not (await seen_by(elsewhere)) & set(stored)
    # A third user's DM sees none of them, and the two-user suggestion is nowhere.
    assert not (await seen_by(dm_viewer("1003"))) & set(stored)
    assert await migrated_db[REFLECTIONS].count_documents({"content": {"$regex": "quiz"}}) == 0


async def test_a_second_run_adds_nothing(migrated_db: Db, legacy: LegacyData) -> None:
    clock = ManualClock(NOW)
    first = await import_legacy(
        migrated_db, dry_run=False, embedder=HashEmbedder(), clock=clock, user_map=USER_MAP
    )
    after_first = await counts(migrated_db)
    snapshot = {
        name: sorted([d["_id"] async for d in migrated_db[name].find({}, {"_id": 1})])
        for name in (FACTS, REFLECTIONS, CONSOLIDATED)
    }
    clock.advance(timedelta(hours=1))
    embedder = HashEmbedder()
    second = await import_legacy(
        migrated_db, dry_run=False, embedder=embedder, clock=clock, user_map=USER_MAP
    )

    assert await counts(migrated_db) == after_first
    for name, ids in snapshot.items():
        assert sorted([d["_id"] async for d in migrated_db[name].find({}, {"_id": 1})]) == ids
    assert second.imported == 0 and not second.written and embedder.calls == 0
    k = second.kinds
    # The duplicate fact is in the ledger too (so it never replaces a forgotten one).
    assert k["fact"].skipped["already_imported"] == first.kinds["fact"].imported + 1
    assert k["directive"].skipped["already_imported"] == first.kinds["directive"].imported
    assert k["episode"].skipped["already_imported"] == first.kinds["episode"].imported
    assert k["user_blob"].skipped["already_imported"] == 1
    assert k["suggestion"].skipped["already_imported"] == first.kinds["suggestion"].imported == 2
    # A dry run after the import says the same.
    dry = await import_legacy(
        migrated_db, dry_run=True, embedder=None, clock=clock, user_map=USER_MAP
    )
    assert dry.imported == 0


async def test_what_a_user_made_alfred_forget_is_not_imported_again(
    migrated_db: Db, legacy: LegacyData
) -> None:
    clock = ManualClock(NOW)
    await import_legacy(
        migrated_db, dry_run=False, embedder=HashEmbedder(), clock=clock, user_map=USER_MAP
    )
    # "Forget" deletes the records (the real cascade does more; the import only needs
    # the records gone): a fact, a directive, Alice's blob and one episode.
    notes = MongoNotes(migrated_db)
    await migrated_db[FACTS].delete_many({"content": "Alice is allergic to shellfish."})
    await migrated_db[REFLECTIONS].delete_many(
        {
            "content": {
                "$in": ["Wants metric units always.", "Booked the flights; next is the hotel."]
            }
        }
    )
    for blob in await notes.blobs_mentioning(
        [Partition.dm("1001").key()], ["concise replies", "Booked the flights"]
    ):
        await notes.delete_blob(blob.id)
    after_forget = await counts(migrated_db)

    again = await import_legacy(
        migrated_db, dry_run=False, embedder=HashEmbedder(), clock=clock, user_map=USER_MAP
    )
    assert again.imported == 0
    assert await counts(migrated_db) == after_forget
    everything = [str(d) async for d in migrated_db[FACTS].find({})]
    everything += [str(d) async for d in migrated_db[REFLECTIONS].find({})]
    everything += [str(d) async for d in migrated_db[CONSOLIDATED].find({})]
    for forgotten in ("shellfish", "metric units", "Booked the flights", "concise replies"):
        assert not any(forgotten in doc for doc in everything)
    # The ledger holds ids and kinds only.
    ledger = [d async for d in migrated_db[LEGACY_LEDGER].find({})]
    assert ledger and all(set(d) == {"_id", "kind", "at"} for d in ledger)


async def test_a_newer_blob_is_kept_and_absorbed_directives_stay_buffered(
    migrated_db: Db, legacy: LegacyData
) -> None:
    from memory.models import Consolidated

    notes = MongoNotes(migrated_db)
    await notes.save_blob(
        Consolidated(
            id="alfred-blob",
            scope=ReflectionScope.USER,
            partition=Partition.dm("1001"),
            content="Formed by Alfred since.",
            word_limit=400,
            last_consolidated_at=NOW,
        )
    )
    report = await import_legacy(
        migrated_db,
        dry_run=False,
        embedder=HashEmbedder(),
        clock=ManualClock(NOW),
        user_map=USER_MAP,
    )
    assert report.kinds["user_blob"].skipped["partition_has_blob"] == 1
    blob = await notes.blob(ReflectionScope.USER, Partition.dm("1001"))
    assert blob is not None and blob.content == "Formed by Alfred since."
    # d1 was absorbed into the legacy blob, which was not imported: it is buffered now,
    # so the next consolidation merges it into Alfred's blob instead of losing it.
    buffered = await notes.unabsorbed(ReflectionScope.USER, Partition.dm("1001"))
    assert sorted(r.content for r in buffered) == [
        "Prefers short answers in the morning.",
        "Users like travel tips.",
        "Wants metric units always.",
    ]


async def test_agent_filter_and_no_legacy_collections(migrated_db: Db, db: Db) -> None:
    # No legacy collections: nothing to do, and it says so.
    empty = await import_legacy(db, dry_run=False, embedder=HashEmbedder(), clock=ManualClock(NOW))
    assert not empty.found and empty.imported == 0
    assert "no legacy collections" in empty.lines()[0]

    data = LegacyData()
    data.raw("mine", "fact", "Dana keeps bees.", S1, ["2001"])
    data.raw("theirs", "fact", "Eve keeps goats.", S2, ["2002"], agent=OTHER_AGENT)
    await migrated_db[LEGACY_SESSIONS].insert_many(data.sessions)
    report = await import_legacy(
        migrated_db,
        dry_run=False,
        embedder=HashEmbedder(),
        clock=ManualClock(NOW),
        agent_id=str(AGENT),
    )
    assert report.kinds["fact"].imported == 1
    assert report.kinds["fact"].skipped["other_agent"] == 1
    assert [d["content"] async for d in migrated_db[FACTS].find({})] == ["Dana keeps bees."]

    assert await drop_legacy_collections(migrated_db) == [LEGACY_SESSIONS]
    assert LEGACY_SESSIONS not in await migrated_db.list_collection_names()


async def test_migration_imports_and_a_dry_run_is_never_recorded(db: Db) -> None:
    data, users, shards = build_legacy()
    await db[LEGACY_SESSIONS].insert_many(data.sessions)
    await db[LEGACY_USER].insert_many(users)
    await db[LEGACY_AGENT].insert_many(shards)
    await db[LEGACY_USER_MAP].insert_one({"_id": str(U1), "user_id": 1001})
    lines: list[str] = []
    ctx = MigrationContext(db=db, atlas_search=False, embedding_dims=64, log=lines.append)
    ctx.legacy_dry_run = True
    ctx.legacy_user_map = USER_MAP
    ctx.clock = ManualClock(NOW)

    with pytest.raises(LegacyDryRunFinished) as raised:
        await migrate(ctx)
    check_counts(raised.value.report)
    assert 4 not in (await status(db)).applied  # still pending
    assert await db[FACTS].count_documents({}) == 0

    ctx.legacy_dry_run = False
    ctx.embedder = HashEmbedder()
    await migrate(ctx)
    assert 4 in (await status(db)).applied
    assert await db[FACTS].count_documents({}) == 4
    assert any("legacy import (applied)" in line for line in lines)
