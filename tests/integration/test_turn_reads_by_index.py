"""A reply turn's two combined reads fetch every part through an index, and return
exactly what the single reads they replace return, privacy filter included.

The embedded server runs a ``$unionWith`` sub-pipeline over the whole foreign collection
(149 ms for one user among 8,000), and a ``$lookup`` from an index only when its
``foreignField`` leads one; otherwise it reads the whole collection too. So the check on
the shape is on the commands sent: no ``$unionWith`` anywhere, every read opening with an
indexed ``$match`` or with ``$documents``, every ``$lookup`` by a field that leads an index
of the collection it reads. The check on the result compares each part, for viewers in
every kind of thread, with a plain query under the privacy filter, on a world with
partitions of other circles, other people's DMs, a former member's shared partition and
questions in every state. The partition versions read alone (outside a turn) are held
to the same.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo import turn_memo
from integrations.mongo.codec import NEWEST_FIRST, message_to_doc
from integrations.mongo.directory import MongoDirectory
from integrations.mongo.facts import MongoFactStore
from integrations.mongo.notes import MongoNotes
from integrations.mongo.turn_memo import WriteInvalidation
from integrations.mongo.turn_reads import (
    HISTORY_PREFETCH,
    directory_snapshot,
    memory_snapshot,
    messages_part,
)
from memory.constants import CIRCLES, CLARIFICATIONS, MESSAGES, PARTITIONS, THREADS, USERS
from memory.models import Message, Partition, Role, Viewer
from memory.privacy import and_visible, is_visible, visibility_branches, visibility_filter
from tests.helpers.watched_db import Reads, own_client
from tests.helpers.world import dm, group, viewer

NOW = datetime(2026, 3, 2, 9, tzinfo=UTC)
OPEN = {"status": {"$in": ["pending", "asked"]}}
WORLD = [
    Partition.dm("ann"),
    Partition.dm("bob"),
    Partition.dm("cat"),
    Partition.circle("fam"),
    Partition.member("fam", "ann"),
    Partition.member("fam", "bob"),
    Partition.member("fam", "zed"),  # zed left the family; what he shared stays the circle's
    Partition.circle("work"),
    Partition.member("work", "ann"),
    Partition.member("work", "cat"),
]
VIEWERS = [
    viewer("ann", dm("ann"), ["fam", "work"]),
    viewer("ann", group("fam"), ["fam", "work"]),
    viewer("ann", group("work"), ["fam", "work"]),
    viewer("bob", dm("bob"), ["fam"]),
    viewer("bob", group("fam"), ["fam"]),
    viewer("bob", group("work"), ["fam"]),  # not a member: sees nothing
    viewer("cat", dm("cat"), ["work"]),
    viewer("zed", dm("zed"), []),
    viewer("zed", group("fam"), []),
    viewer("eve", dm("bob"), []),  # someone else's DM: sees nothing
]


@pytest.fixture
async def watched(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> AsyncIterator[tuple[AsyncDatabase[dict[str, Any]], Reads]]:
    """The world, through a client of the test's own that records the aggregates."""
    await migrated_db[PARTITIONS].insert_many(
        [{"_id": p.key(), **p.as_fields(), "version": n + 1} for n, p in enumerate(WORLD)]
    )
    # A record no partition of Alfred's has the shape of (a DM's, filed under a circle):
    # fetched with the circle's, it must still be dropped by the privacy filter.
    await migrated_db[PARTITIONS].insert_one(
        {"_id": "stray", "visibility": "dm", "circle_id": "fam", "owner_user_id": "bob"}
    )
    questions = []
    for n, p in enumerate(WORLD):
        for status in ("pending", "asked", "resolved"):
            for user in ("ann", "bob", "cat", "zed"):
                questions.append(
                    {"_id": f"q{n}-{status}-{user}", "user_id": user, "status": status}
                    | p.as_fields()
                )
    await migrated_db[CLARIFICATIONS].insert_many(questions)
    directory = MongoDirectory(migrated_db)
    for n, name in enumerate(("ann", "bob", "cat", "zed")):
        await migrated_db[USERS].insert_one({"_id": name, "name": name.title(), "n": n})
        await directory.dm_thread(name, 10 + n, NOW)
    for n, (circle, members) in enumerate(
        (("fam", ["ann", "bob"]), ("work", ["ann", "cat"]), ("old", ["ann", "zed"]))
    ):
        await migrated_db[CIRCLES].insert_one({"_id": circle, "member_ids": members, "n": n})
    await directory.archive_circle("old", NOW)
    aggregates = Reads()
    async with own_client(migrated_db, WriteInvalidation(), aggregates) as db:
        yield db, aggregates


def _stages(pipeline: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every stage of a pipeline, and of the pipelines inside its stages."""
    for stage in pipeline:
        (name, spec), *_ = stage.items()
        yield name, spec
        if name == "$lookup" and "pipeline" in spec:
            yield from _stages(spec["pipeline"])
        if name == "$unionWith" and isinstance(spec, dict) and "pipeline" in spec:
            yield from _stages(spec["pipeline"])
        if name == "$facet":
            for inner in spec.values():
                yield from _stages(inner)


async def _leading_fields(db: AsyncDatabase[dict[str, Any]], coll: str) -> set[str]:
    return {info["key"][0][0] for info in (await db[coll].index_information()).values()}


async def test_every_part_of_a_turns_reads_is_fetched_through_an_index(
    watched: tuple[AsyncDatabase[dict[str, Any]], Reads],
) -> None:
    db, aggregates = watched
    for who in VIEWERS:
        with turn_memo.reply_turn():
            memo = turn_memo.current()
            assert memo is not None
            await directory_snapshot(db, memo, who.user_id, who.thread.id)
            await memory_snapshot(db, memo, who)
    assert len(aggregates.sent) == 3 * len(VIEWERS)  # one directory read, two memory reads
    lookups = 0
    for coll, pipeline in aggregates.sent:
        opening = next(iter(pipeline[0]))
        assert opening == ("$documents" if coll == 1 else "$match"), (coll, pipeline[0])
        for name, spec in _stages(pipeline):
            assert name != "$unionWith", f"a $unionWith reads all of {spec}"
            if name == "$lookup":
                lookups += 1
                assert "foreignField" in spec, f"a $lookup without a key reads all of {spec}"
                indexed = await _leading_fields(db, spec["from"])
                assert spec["foreignField"] in indexed, (spec["from"], spec["foreignField"])
    # users, threads, circles and their members per directory read; questions and, for
    # a viewer who may see any, partitions (by key in a DM, by circle in a group).
    seeing = sum(1 for who in VIEWERS if visibility_branches(who))
    assert 0 < seeing < len(VIEWERS)
    assert lookups == 5 * len(VIEWERS) + seeing


async def test_in_a_turn_each_part_is_exactly_what_a_plain_read_finds(
    watched: tuple[AsyncDatabase[dict[str, Any]], Reads],
) -> None:
    db, _ = watched
    await _each_part_is_what_a_plain_read_finds(db)


async def test_beside_a_history_each_part_is_still_what_a_plain_read_finds(
    watched: tuple[AsyncDatabase[dict[str, Any]], Reads],
) -> None:
    """The lookups run beside the thread's last messages, not on them: with a history
    in every thread, each part, the history included, is still exactly a plain read's."""
    db, _ = watched
    threads = {who.thread.id: who.thread for who in VIEWERS}
    for n, thread in enumerate(threads.values()):
        partition = (
            Partition.circle(thread.circle_id)
            if thread.circle_id is not None
            else Partition.dm(thread.user_id or "")
        )
        await db[MESSAGES].insert_many(
            [
                message_to_doc(
                    Message(
                        id=f"{thread.id}-{i}",
                        thread_id=thread.id,
                        partition=partition,
                        role=Role.USER if i % 2 else Role.AGENT,
                        user_id="ann" if i % 2 else None,
                        text=f"message {i} of {thread.id}",
                        created_at=NOW + timedelta(minutes=10 * n + i),
                    )
                )
                for i in range(HISTORY_PREFETCH + 4)
            ]
        )
    histories = await _each_part_is_what_a_plain_read_finds(db)
    assert histories == len(VIEWERS) * HISTORY_PREFETCH


async def _each_part_is_what_a_plain_read_finds(db: AsyncDatabase[dict[str, Any]]) -> int:
    """Check every viewer's turn reads against plain reads; the history messages seen."""
    seen = {"partitions": 0, "questions": 0, "history": 0}
    for who in VIEWERS:
        with turn_memo.reply_turn():
            memo = turn_memo.current()
            assert memo is not None
            circles = await directory_snapshot(db, memo, who.user_id, who.thread.id)
            parts = await memory_snapshot(db, memo, who)
            person, thread = (
                memo.get(USERS, ("id", who.user_id)),
                memo.get(THREADS, ("id", who.thread.id)),
            )
        assert person == await db[USERS].find_one({"_id": who.user_id})
        assert thread == await db[THREADS].find_one({"_id": who.thread.id})
        active = db[CIRCLES].find({"member_ids": who.user_id, "archived_at": None})
        assert sorted(c["_id"] for c in circles) == sorted([d["_id"] async for d in active])
        expected = [d async for d in db[PARTITIONS].find(visibility_filter(who))]
        assert _by_id(parts[PARTITIONS]) == _by_id(expected), who
        query = {"user_id": who.user_id, **OPEN}
        expected = [d async for d in db[CLARIFICATIONS].find(and_visible(who, query))]
        assert _by_id(parts[CLARIFICATIONS]) == _by_id(expected), who
        for doc in parts[PARTITIONS] + parts[CLARIFICATIONS]:
            assert is_visible(Partition.from_fields(doc), who), (who, doc["_id"])
        last = db[MESSAGES].find({"thread_id": who.thread.id}, sort=list(NEWEST_FIRST))
        expected = [d async for d in last.limit(HISTORY_PREFETCH)]
        assert messages_part(parts[MESSAGES], "history") == expected, who
        seen["partitions"] += len(parts[PARTITIONS])
        seen["questions"] += len(parts[CLARIFICATIONS])
        seen["history"] += len(expected)
    # ann's DM: her own and her two circles' (4); the family group: all four of its
    # partitions, zed's included; nobody else's DM anywhere.
    assert _visible_keys(VIEWERS[0]) == {
        "dm:-:ann",
        "shared:fam:-",
        "shared:fam:ann",
        "shared:work:-",
        "shared:work:ann",
    }
    assert "shared:fam:zed" in _visible_keys(VIEWERS[1])
    assert seen["partitions"] > 0 and seen["questions"] > 0
    return seen["history"]


def _by_id(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(d["_id"]): d for d in docs}


def _visible_keys(who: Viewer) -> set[str]:
    return {p.key() for p in WORLD if is_visible(p, who)}


async def test_alone_the_partition_versions_are_read_by_key_too(
    watched: tuple[AsyncDatabase[dict[str, Any]], Reads],
) -> None:
    """Outside a turn (the worker, the bench, a search alone) the version reads of the
    fact and note caches fetch the same records by key, filter inside."""
    db, aggregates = watched
    facts, notes = MongoFactStore(db), MongoNotes(db)
    reads: list[tuple[Any, list[dict[str, Any]]]] = []
    for who in VIEWERS:
        expected = _by_id([d async for d in db[PARTITIONS].find(visibility_filter(who))])
        aggregates.sent.clear()
        aggregates.finds.clear()
        versions = await facts.visible_partitions(who)
        versions_of_notes = await notes.notes_versions(who)
        sent = aggregates.sent + aggregates.finds
        # Plain filters as they are (one read each); a DM in a circle's by _id.
        assert len(sent) == (2 if visibility_branches(who) else 0), (who, sent)
        assert len(aggregates.sent) == (2 if len(visibility_branches(who)) > 1 else 0)
        reads += sent
        assert {p.partition.key(): p.version for p in versions} == {
            k: d["version"] for k, d in expected.items()
        }, who
        assert set(versions_of_notes) == set(expected), who
        assert all(is_visible(p.partition, who) for p in versions)
    for coll, pipeline in reads:
        assert coll == PARTITIONS, coll
        assert not any(k.startswith("$") for k in pipeline[0]["$match"]), pipeline[0]
        plan = await db.command("explain", {"aggregate": coll, "pipeline": pipeline, "cursor": {}})
        assert "COLLSCAN" not in str(plan) and "IXSCAN" in str(plan), pipeline[0]
    assert len(reads) == 2 * sum(1 for who in VIEWERS if visibility_branches(who))
