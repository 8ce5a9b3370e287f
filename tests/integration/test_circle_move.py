"""A group upgraded to a supergroup: the circle's memories move, and privacy is unchanged.

On the real embedded database. The central check is an equivalence: for every person in
every place (the group, their DM, another circle's group), what they can read through
every read path after the move, in the supergroup, is exactly what they could read
before, in the old group. DM partitions are never touched; nothing is lost; a second
move (Telegram announces the upgrade twice) changes nothing; an interrupted move
finishes when run again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from integrations.mongo.circle_move import move_circle_documents
from integrations.mongo.lists import MongoListStore
from memory.constants import (
    CIRCLES,
    FACTS,
    PARTITIONED_COLLECTIONS,
    PARTITIONS,
    THREADS,
)
from memory.ids import new_id
from memory.lists import ListItem, SharedList, item_key
from memory.models import (
    Category,
    Clarification,
    Consolidated,
    Message,
    Partition,
    Provenance,
    Reflection,
    ReflectionScope,
    Role,
    Thread,
    ThreadKind,
    Viewer,
)
from runtime.bundle import Services
from runtime.container import build_membership
from runtime.settings import Settings
from tests.helpers.services import migrated_services

NOW = datetime(2026, 5, 1, 12, tzinfo=UTC)
OLD, NEW, OTHER = -5001, -1005001, -1007001
ALICE, BOB, CAROL = "301", "302", "303"
Seen = frozenset[tuple[str, str]]


@pytest.fixture
async def s(settings: Settings) -> AsyncIterator[Services]:
    async with migrated_services(settings, "move", NOW) as services:
        d = services.directory
        for uid, name in ((ALICE, "Alice"), (BOB, "Bob"), (CAROL, "Carol")):
            await d.upsert_user(int(uid), name, name.lower(), NOW)
            await d.dm_thread(uid, int(uid), NOW)
        for chat, title, members in ((OLD, "Fam", (ALICE, BOB)), (OTHER, "Club", (BOB, CAROL))):
            circle = await d.upsert_circle(chat, title, NOW)
            for uid in members:
                await d.add_member(circle.id, uid)
        yield services


def group(chat: int) -> Thread:
    return Thread(id=str(chat), kind=ThreadKind.GROUP, circle_id=str(chat))


def dm(user: str) -> Thread:
    return Thread(id=user, kind=ThreadKind.DM, user_id=user)


async def remember(s: Services, partition: Partition, thread: Thread, text: str) -> None:
    """A memory of every kind in ``partition``: fact, reflection, consolidated note,
    clarification and the journaled message it came from."""
    speaker = partition.owner_user_id or ALICE
    await s.writer.add_many(
        [(text, Category.FACT, 5, partition, Provenance(thread_id=thread.id, speaker_id=speaker))]
    )
    await s.notes.add_reflection(
        Reflection(
            id=new_id(),
            content=f"reflection: {text}",
            scope=ReflectionScope.USER if partition.owner_user_id else ReflectionScope.CIRCLE,
            partition=partition,
            thread_id=thread.id,
            created_at=NOW,
        )
    )
    await s.notes.save_blob(
        Consolidated(
            id=new_id(),
            scope=ReflectionScope.USER if partition.owner_user_id else ReflectionScope.CIRCLE,
            partition=partition,
            content=f"summary: {text}",
            word_limit=400,
            last_consolidated_at=NOW,
        )
    )
    await s.notes.add_clarification(
        Clarification(
            id=new_id(), user_id=speaker, partition=partition, question=f"{text}?", created_at=NOW
        )
    )
    await s.journal.append(
        Message(
            id=f"{thread.id}:{new_id()}",
            thread_id=thread.id,
            partition=partition,
            role=Role.USER,
            user_id=speaker,
            text=f"said: {text}",
            created_at=NOW,
        )
    )


async def seen(s: Services, user: str, thread: Thread) -> Seen:
    """Everything ``user`` can read in ``thread``, through every read path."""
    viewer: Viewer = await s.directory.viewer(user, thread)
    out = {("fact", f.content) for f in await s.facts.list_visible(viewer, include_history=True)}
    out |= {
        ("reflection", r.content)
        for r in await s.notes.visible_reflections(viewer, session_id=None)
    }
    out |= {("blob", b.content) for b in await s.notes.visible_blobs(viewer, session_id=None)}
    out |= {("message", m.text) for m in await s.journal.visible(viewer)}
    asked = await s.notes.pending_clarification(viewer)
    if asked is not None:
        out.add(("clarification", asked.question))
    result = await s.retriever.search(viewer, "anniversary gift kayak hazelnuts club", limit=50)
    out |= {("search", f.fact.content) for f in result.facts}
    return frozenset(out)


PLACES = [
    (ALICE, "group"),
    (BOB, "group"),
    (CAROL, "group"),
    (ALICE, "dm"),
    (BOB, "dm"),
    (CAROL, "dm"),
    (BOB, "other"),
    (CAROL, "other"),
]


def place(user: str, where: str, fam: int) -> Thread:
    return {"group": group(fam), "dm": dm(user), "other": group(OTHER)}[where]


async def everything_seen(s: Services, fam: int) -> dict[tuple[str, str], Seen]:
    return {(u, w): await seen(s, u, place(u, w, fam)) for u, w in PLACES}


async def fill(s: Services) -> None:
    fam = group(OLD)
    await remember(s, Partition.circle(str(OLD)), fam, "our anniversary is on 12 June")
    await remember(s, Partition.member(str(OLD), ALICE), fam, "Alice is allergic to hazelnuts")
    await remember(s, Partition.member(str(OLD), BOB), fam, "Bob plays the cello")
    await remember(s, Partition.dm(ALICE), dm(ALICE), "the gift for Bob is a red kayak")
    await remember(s, Partition.dm(BOB), dm(BOB), "Bob is planning a trip to Porto")
    await remember(s, Partition.circle(str(OTHER)), group(OTHER), "the club meets on Fridays")
    await remember(s, Partition.member(str(OTHER), CAROL), group(OTHER), "Carol hosts the club")


async def test_what_everyone_sees_is_unchanged_and_nothing_is_left_behind(s: Services) -> None:
    await fill(s)
    db = s.mongo.db
    dm_docs_before = {
        name: sorted([str(d["_id"]) async for d in db[name].find({"visibility": "dm"})])
        for name in PARTITIONED_COLLECTIONS
    }
    assert all(dm_docs_before.values()), "every kind of document exists in the DMs"
    counts_before = {name: await db[name].count_documents({}) for name in PARTITIONED_COLLECTIONS}
    before = await everything_seen(s, OLD)
    assert ("fact", "our anniversary is on 12 June") in before[(BOB, "group")]
    assert ("fact", "the gift for Bob is a red kayak") not in before[(BOB, "group")]

    move = await build_membership(s).move_circle(OLD, NEW, "Fam")
    assert move.anything and move.moved[FACTS] == 3 and move.merged_duplicates == 0

    after = await everything_seen(s, NEW)
    for key in before:
        assert after[key] == before[key], key
    # nothing lost, nothing with the old id anywhere, DM documents untouched
    assert {n: await db[n].count_documents({}) for n in PARTITIONED_COLLECTIONS} == counts_before
    for name in (*PARTITIONED_COLLECTIONS, PARTITIONS):
        assert await db[name].count_documents({"circle_id": str(OLD)}) == 0, name
        assert await db[name].count_documents({"pkey": {"$regex": str(OLD)}}) == 0, name
    for name in PARTITIONED_COLLECTIONS:
        private = sorted([str(d["_id"]) async for d in db[name].find({"visibility": "dm"})])
        assert private == dm_docs_before[name], name
    assert await db[CIRCLES].find_one({"_id": str(OLD)}) is None
    assert await db[THREADS].find_one({"_id": str(OLD)}) is None
    circle = await s.directory.circle(str(NEW))
    assert circle is not None and sorted(circle.member_ids) == [ALICE, BOB]
    assert circle.telegram_chat_id == NEW
    thread = await s.directory.thread(str(NEW))
    assert thread is not None and thread.circle_id == str(NEW)
    # the journal follows the thread, so formation finds the group's unformed messages
    unformed = await s.journal.unformed(str(NEW))
    assert {m.text for m in unformed} >= {"said: our anniversary is on 12 June"}
    assert await db[FACTS].count_documents({"provenance.thread_id": str(OLD)}) == 0

    # Telegram announces the upgrade twice: the second move finds nothing to do
    again = await build_membership(s).move_circle(OLD, NEW, "Fam")
    assert not again.anything
    assert await everything_seen(s, NEW) == after


async def test_a_supergroup_that_already_has_memories_is_merged_with(s: Services) -> None:
    """Someone wrote in the supergroup before the move arrived: the circle exists under
    both ids; the move merges, keeping one copy of a fact said in both."""
    await fill(s)
    fresh = await s.directory.upsert_circle(NEW, "Fam", NOW)
    await s.directory.add_member(fresh.id, BOB)
    await remember(s, Partition.circle(str(NEW)), group(NEW), "our anniversary is on 12 June")
    await remember(s, Partition.circle(str(NEW)), group(NEW), "the boiler was serviced")
    await s.directory.touch(str(NEW), NOW, 10)

    move = await build_membership(s).move_circle(OLD, NEW, "Fam")
    assert move.merged_duplicates >= 1
    facts = [f.content for f in await s.facts.current_in_partition(Partition.circle(str(NEW)))]
    assert sorted(facts) == ["our anniversary is on 12 June", "the boiler was serviced"]
    circle = await s.directory.circle(str(NEW))
    assert circle is not None and sorted(circle.member_ids) == [ALICE, BOB]
    alice = await seen(s, ALICE, group(NEW))
    assert ("fact", "Alice is allergic to hazelnuts") in alice
    assert ("fact", "the gift for Bob is a red kayak") not in alice
    pending, _ = await s.directory.pending(str(NEW))
    assert pending >= 1


async def test_an_interrupted_move_finishes_when_run_again(s: Services) -> None:
    """A crash after the facts moved but before the rest: the old circle is still there,
    so the next announcement (or a send refused with the new id) finishes the move."""
    await fill(s)
    before = await everything_seen(s, OLD)
    db = s.mongo.db
    # what a crash halfway leaves: the new circle and the facts moved, the rest not
    await db[CIRCLES].insert_one(
        {
            "_id": str(NEW),
            "title": "Fam",
            "telegram_chat_id": NEW,
            "member_ids": [ALICE, BOB],
            "archived_at": None,
            "created_at": NOW,
        }
    )
    for doc in [d async for d in db[FACTS].find({"circle_id": str(OLD)})]:
        moved = Partition.from_fields({**doc, "circle_id": str(NEW)})
        await db[FACTS].update_one(
            {"_id": doc["_id"]}, {"$set": {"circle_id": str(NEW), "pkey": moved.key()}}
        )
    await move_circle_documents(db, str(OLD), str(NEW), new_chat_id=NEW, title=None, at=NOW)
    assert await everything_seen(s, NEW) == before
    for name in (*PARTITIONED_COLLECTIONS, PARTITIONS):
        assert await db[name].count_documents({"circle_id": str(OLD)}) == 0, name


async def test_moving_an_unknown_group_does_nothing(s: Services) -> None:
    await fill(s)
    before = await everything_seen(s, OLD)
    move = await build_membership(s).move_circle(-999, -1000999, None)
    assert not move.anything and move.fact_ids == []
    assert await everything_seen(s, OLD) == before
    assert await s.directory.circle("-1000999") is None


async def test_the_circles_lists_follow_it_to_the_supergroup(s: Services) -> None:
    await fill(s)
    lists = MongoListStore(s.mongo.db)

    async def new_list(key: str, partition: Partition, thread: str, *items: str) -> None:
        made = await lists.create(
            SharedList(
                id=new_id(),
                key=key,
                title=key,
                partition=partition,
                thread_id=thread,
                created_at=NOW,
                used_at=NOW,
            )
        )
        found = [ListItem(text=i, key=item_key(i), added_by=ALICE, added_at=NOW) for i in items]
        await lists.add_items(made.id, found, NOW)

    await new_list("shopping", Partition.circle(str(OLD)), str(OLD), "milk", "eggs")
    await new_list("hardware", Partition.circle(str(OLD)), str(OLD), "glue")
    # made in the supergroup before the move arrived: merged with, not duplicated
    await new_list("shopping", Partition.circle(str(NEW)), str(NEW), "eggs", "bread")
    await new_list("shopping", Partition.dm(ALICE), dm(ALICE).id, "a red kayak")

    move = await build_membership(s).move_circle(OLD, NEW, "Fam")

    assert move.moved["lists"] == 2
    docs = [d async for d in s.mongo.db["lists"].find({}).sort("key")]
    seen = sorted(
        (
            d["key"],
            d["visibility"],
            d["circle_id"],
            d.get("thread_id") == str(NEW) or None,
            sorted(i["text"] for i in d["items"]),
        )
        for d in docs
    )
    assert seen == [
        ("hardware", "shared", str(NEW), True, ["glue"]),
        ("shopping", "dm", None, None, ["a red kayak"]),
        ("shopping", "shared", str(NEW), True, ["bread", "eggs", "milk"]),
    ]
