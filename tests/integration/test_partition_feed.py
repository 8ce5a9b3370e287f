"""Partition versions kept between searches by a change stream, on the real embedded server.

"Another process" is a second client without this process's write listener: the feed
learns of its writes only from the change stream, as it would of a worker's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.connection import MongoHandle
from integrations.mongo.facts import MongoFactStore
from integrations.mongo.partition_feed import PartitionFeed
from integrations.mongo.turn_memo import reply_turn
from memory.clock import ManualClock
from memory.constants import PARTITIONS
from memory.facts import FactWriter
from memory.models import Partition, Viewer
from memory.privacy import is_visible, visibility_filter
from memory.retrieval import RetrievalConfig, Retriever
from memory.search.app_backend import AppSearchBackend
from memory.search.scope_index import ScopeIndexCache
from tests.helpers.fakes import HashEmbedder
from tests.helpers.world import dm, group, viewer

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

ALICE_GROUP = viewer("alice", group("fam"), ["fam", "work"])
BOB_GROUP = viewer("bob", group("fam"), ["fam"])
ALICE_DM = viewer("alice", dm("alice"), ["fam", "work"])
BOB_DM = viewer("bob", dm("bob"), ["fam"])
CAROL_WORK = viewer("carol", group("work"), ["work"])
CAROL_DM = viewer("carol", dm("carol"), ["work"])
EVERYONE = [ALICE_GROUP, BOB_GROUP, ALICE_DM, BOB_DM, CAROL_WORK, CAROL_DM]

SEED = [
    ("The family is going to Lisbon in May", Partition.circle("fam")),
    ("Bob loves sushi and ramen", Partition.member("fam", "bob")),
    ("The work team offsite is in Porto on Friday", Partition.circle("work")),
    ("Carol thinks the Friday meeting is pointless", Partition.dm("carol")),
]

#: Long enough for an event on a loaded CI machine; a pass takes milliseconds.
SETTLE_S = 10.0


class World:
    """This process's store (with the feed) and another process's writer."""

    def __init__(self, db: AsyncDatabase[dict[str, Any]], other_db: AsyncDatabase[Any]) -> None:
        self.db = db
        self.feed = PartitionFeed(db)
        self.store = MongoFactStore(db, feed=self.feed)
        self.clock = ManualClock(NOW)
        self.embedder = HashEmbedder()
        self.writer = FactWriter(self.store, self.embedder, self.clock)
        self.other = FactWriter(MongoFactStore(other_db), self.embedder, self.clock)
        cache = ScopeIndexCache(
            self.store, dimensions=self.embedder.dimensions, model_name=self.embedder.model_name
        )
        self.retriever = Retriever(
            AppSearchBackend(cache), self.embedder, self.clock, RetrievalConfig()
        )

    async def truth(self, v: Viewer) -> dict[str, int]:
        """What a read with the privacy filter inside answers now."""
        coll = self.db[PARTITIONS]
        return {str(d["_id"]): int(d["version"]) async for d in coll.find(visibility_filter(v))}

    async def listed(self, v: Viewer) -> dict[str, int]:
        return {pv.partition.key(): pv.version for pv in await self.store.visible_partitions(v)}

    async def found(self, v: Viewer, query: str) -> list[str]:
        result = await self.retriever.search(v, query, limit=20)
        return [f.fact.content for f in result.facts]

    async def warm(self, viewers: list[Viewer]) -> None:
        """Open the stream and keep every viewer's answer."""
        await until(lambda: self._live_after_read(), "the change stream to open")
        for v in viewers:
            await self.store.visible_partitions(v)  # read and kept
            hits = self.feed.hits
            await self.store.visible_partitions(v)
            assert self.feed.hits == hits + 1, "the second read was not served from the feed"

    async def _live_after_read(self) -> bool:
        await self.store.visible_partitions(ALICE_GROUP)
        return self.feed.live


async def until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + SETTLE_S
    while not await check():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {SETTLE_S} s for {what}")
        await asyncio.sleep(0.01)


@pytest.fixture
async def world(
    migrated_db: AsyncDatabase[dict[str, Any]], mongo: MongoHandle
) -> AsyncIterator[World]:
    assert mongo.lease is not None, "these tests run on the embedded server"
    other: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongo.lease.url, tz_aware=True)
    w = World(migrated_db, other[migrated_db.name])
    for content, partition in SEED:
        await w.writer.add(content, partition)
    try:
        yield w
    finally:
        await w.feed.aclose()
        await other.close()


async def test_kept_versions_are_served_without_a_read_and_match_the_database(
    world: World,
) -> None:
    await world.warm(EVERYONE)
    for v in EVERYONE:
        assert await world.listed(v) == await world.truth(v)


async def test_another_process_write_reaches_the_next_searches(world: World) -> None:
    await world.warm(EVERYONE)
    before = await world.listed(BOB_GROUP)
    await world.other.add("The family cat is called Miso", Partition.circle("fam"))

    async def moved() -> bool:
        return await world.listed(BOB_GROUP) != before

    await until(moved, "the other process's write to reach the kept versions")
    assert await world.listed(BOB_GROUP) == await world.truth(BOB_GROUP)
    assert "The family cat is called Miso" in await world.found(BOB_GROUP, "cat Miso")


async def test_this_process_write_and_forget_are_seen_at_once(world: World) -> None:
    await world.warm(EVERYONE)
    # A write of this process drops what is kept as it starts, with no event needed
    # (this one matches nothing, so the stream has nothing to say about it).
    await world.db[PARTITIONS].update_one({"_id": "no such partition"}, {"$inc": {"version": 1}})
    assert world.feed.kept(ALICE_DM) is None
    await world.warm([ALICE_DM])
    fact, _ = await world.writer.add("Alice keeps a spare key under the mat", Partition.dm("alice"))
    # No waiting: what the person was told ("Got it") holds for their very next search.
    assert "Alice keeps a spare key under the mat" in await world.found(ALICE_DM, "spare key mat")
    await world.store.delete([fact.id])
    assert "Alice keeps a spare key under the mat" not in await world.found(
        ALICE_DM, "spare key mat"
    )


async def test_kept_answers_never_leak_across_dm_group_and_circle(world: World) -> None:
    """Another process creates partitions and writes in every kind of place while every
    viewer's answer is kept; once the events are in, each viewer lists exactly what the
    privacy-filtered read lists, and finds no one else's words."""
    await world.warm(EVERYONE)
    secrets = [
        ("Alice's DM secret is the kiwi allergy", Partition.dm("alice")),
        ("Bob's DM secret is the ring he bought", Partition.dm("bob")),
        ("Dave joined and likes chess", Partition.member("fam", "dave")),
        ("Carol's work note: budget is tight", Partition.member("work", "carol")),
        ("The new circle plans a hike", Partition.circle("hikers")),
        ("Carol's DM secret is the job offer", Partition.dm("carol")),
    ]
    for content, partition in secrets:
        await world.other.add(content, partition)
    last = secrets[-1][1].key()

    async def seen_everywhere() -> bool:
        for v in EVERYONE:
            if await world.listed(v) != await world.truth(v):
                return False
        return True

    await until(seen_everywhere, "the other process's writes to reach every viewer")
    assert last in await world.listed(CAROL_DM)
    for v in EVERYONE:
        for key in await world.listed(v):
            doc = await world.db[PARTITIONS].find_one({"_id": key})
            assert doc is not None and is_visible(Partition.from_fields(doc), v), (v, key)
        found = set(await world.found(v, "secret DM kiwi ring chess budget hike job offer"))
        for content, partition in secrets:
            if not is_visible(partition, v):
                assert content not in found, (v.thread.id, content)
    assert "Alice's DM secret is the kiwi allergy" in await world.found(ALICE_DM, "kiwi allergy")


async def test_a_read_that_raced_a_change_is_not_kept(world: World) -> None:
    await world.warm([BOB_GROUP])
    stale = [d async for d in world.db[PARTITIONS].find(visibility_filter(BOB_GROUP))]
    read_at = time.monotonic()
    await world.other.add("Bob's circle got a new fact", Partition.circle("fam"))

    async def heard() -> bool:
        return world.feed.last_change > read_at

    await until(heard, "the event of the other process's write")
    world.feed.keep(BOB_GROUP, stale, read_at=read_at)
    assert world.feed.kept(BOB_GROUP) is None
    assert await world.listed(BOB_GROUP) == await world.truth(BOB_GROUP)


async def test_a_turn_snapshot_older_than_a_change_is_not_kept(world: World) -> None:
    """Within a reply turn the versions come from the turn's snapshot; one read before
    another process's change must not outlive the turn in the feed."""
    await world.warm([])
    with reply_turn():
        before = await world.listed(BOB_GROUP)  # from the turn's snapshot, and kept
        assert world.feed.kept(BOB_GROUP) is not None
        await world.other.add("A change during the turn", Partition.circle("fam"))
        started = time.monotonic()

        async def heard() -> bool:
            return world.feed.last_change > started - 1.0 and world.feed.kept(BOB_GROUP) is None

        await until(heard, "the change to drop the kept versions")
        await world.listed(BOB_GROUP)  # the turn's memo may answer; the feed must not keep it
    assert await world.listed(BOB_GROUP) == await world.truth(BOB_GROUP)
    assert await world.listed(BOB_GROUP) != before


async def test_without_the_stream_every_search_reads(world: World) -> None:
    await world.warm([BOB_GROUP])
    await world.feed.aclose()
    assert not world.feed.live
    misses = world.feed.misses
    await world.other.add("Written while no one follows", Partition.circle("fam"))
    # No waiting needed: without the stream nothing kept is served.
    assert await world.listed(BOB_GROUP) == await world.truth(BOB_GROUP)
    assert world.feed.misses == misses + 1
    assert "Written while no one follows" in await world.found(BOB_GROUP, "written follows")


async def test_kept_answers_are_served_only_while_the_stream_answers(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    """Kept answers are served only while the stream answered within ``stale_after_s``:
    a follower whose waits last longer than that never vouches between them."""
    feed = PartitionFeed(migrated_db, max_await_ms=1500, stale_after_s=0.2)
    store = MongoFactStore(migrated_db, feed=feed)
    try:
        await FactWriter(store, HashEmbedder(), ManualClock(NOW)).add(
            "Lisbon in May", Partition.circle("fam")
        )
        await store.visible_partitions(BOB_GROUP)
        await asyncio.sleep(0.5)  # opened, kept, then silent for longer than 0.2 s
        await store.visible_partitions(BOB_GROUP)
        assert not feed.live
        assert feed.kept(BOB_GROUP) is None
    finally:
        await feed.aclose()
