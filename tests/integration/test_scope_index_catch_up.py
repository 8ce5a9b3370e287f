"""A cached scope index catching up with changes by the facts its partitions name.

Each partition's record keeps which facts its last versions changed; a cache that holds
an earlier version loads just those instead of listing the partition (a read of every
fact in it). "Another process" is a second store on the same database: the cache hears
of nothing but the versions it reads, as across processes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.facts import CHANGE_IDS_MAX, CHANGE_RING, MongoFactStore
from memory.clock import ManualClock
from memory.constants import PARTITIONS
from memory.facts import FactWriter
from memory.models import Partition, Viewer
from memory.ports import LoadedFact
from memory.privacy import is_visible
from memory.search.scope_index import LOAD_CHUNK, ScopeIndex, ScopeIndexCache
from tests.helpers.fakes import HashEmbedder
from tests.helpers.world import dm, group, viewer

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ALICE_GROUP = viewer("alice", group("fam"), ["fam"])
ALICE_DM = viewer("alice", dm("alice"), ["fam"])
BOB_DM = viewer("bob", dm("bob"), ["fam"])
FAM = Partition.circle("fam")


class CountingStore(MongoFactStore):
    """The real store, counting the partition listings the cache asks for."""

    def __init__(self, db: AsyncDatabase[dict[str, Any]]) -> None:
        super().__init__(db)
        self.listed: list[list[str]] = []
        self.streamed: list[list[str]] = []  # whole partitions read at a first load

    async def fact_revisions(
        self, viewer: Viewer, partition_keys: Sequence[str]
    ) -> dict[str, tuple[str, int]]:
        self.listed.append(sorted(partition_keys))
        return await super().fact_revisions(viewer, partition_keys)

    async def partition_facts(
        self, viewer: Viewer, partition_keys: Sequence[str], *, batch: int
    ) -> AsyncIterator[LoadedFact]:
        self.streamed.append(sorted(partition_keys))
        async for fact in super().partition_facts(viewer, partition_keys, batch=batch):
            yield fact


class World:
    def __init__(self, db: AsyncDatabase[dict[str, Any]]) -> None:
        self.db = db
        self.embedder = HashEmbedder()
        self.clock = ManualClock(NOW)
        self.reader = CountingStore(db)
        self.cache = self.new_cache(self.reader)
        self.other = MongoFactStore(db)  # another process's writes
        self.writer = FactWriter(self.other, self.embedder, self.clock)

    def new_cache(self, store: MongoFactStore) -> ScopeIndexCache:
        return ScopeIndexCache(
            store, dimensions=self.embedder.dimensions, model_name=self.embedder.model_name
        )

    async def held(self, v: Viewer) -> dict[str, tuple[int, str, bool]]:
        index = await self.cache.index_for(v)
        return {i: (f.rev, f.content, f.pinned) for i, f in index.facts.items()}

    async def truth(self, v: Viewer) -> dict[str, tuple[int, str, bool]]:
        """What an index built from scratch holds now."""
        index = await self.new_cache(MongoFactStore(self.db)).index_for(v)
        return {i: (f.rev, f.content, f.pinned) for i, f in index.facts.items()}


@pytest.fixture
async def world(migrated_db: AsyncDatabase[dict[str, Any]]) -> World:
    w = World(migrated_db)
    for i in range(40):
        await w.writer.add(f"Family fact number {i} about the garden", FAM)
    await w.writer.add("Alice's own note about her dentist", Partition.dm("alice"))
    await w.writer.add("Bob's own note about the ring", Partition.dm("bob"))
    return w


async def test_changes_are_loaded_by_name_without_listing_the_partition(world: World) -> None:
    before = await world.held(ALICE_GROUP)
    assert len(before) == 40
    world.reader.listed.clear()
    loads = world.cache.loads
    ids = sorted(before)
    new, _ = await world.writer.add("The family bought a new lawnmower", FAM)
    await world.writer.reword(ids[0], "Family fact number zero, reworded")
    await world.other.invalidate(ids[1], at=NOW + timedelta(hours=1), reason="no longer true")
    await world.other.delete([ids[2]])
    await world.other.set_pinned([ids[3]], True)

    after = await world.held(ALICE_GROUP)
    assert world.reader.listed == [], "a named change made the cache list the partition"
    assert world.cache.loads - loads == 3  # the new fact, the reworded one, the pinned one
    assert after == await world.truth(ALICE_GROUP)
    assert new.id in after and ids[1] not in after and ids[2] not in after
    assert after[ids[0]][1] == "Family fact number zero, reworded"
    assert after[ids[3]][2] is True


async def test_facts_caught_up_on_keep_their_vectors(world: World) -> None:
    """A fact loaded by name or after a listing is found by meaning, as a fresh index
    finds it: the rows the cache holds are those an index built from scratch reads."""

    def rows(index: ScopeIndex) -> dict[str, list[float]]:
        matrix = index.vectors.matrix
        return {i: matrix[r].tolist() for r, i in enumerate(index.vectors.ids)}

    held = sorted(await world.held(ALICE_GROUP))
    world.reader.listed.clear()
    await world.writer.add("The family bought a new lawnmower", FAM)
    await world.writer.reword(held[0], "Family fact number zero, reworded")
    await world.cache.index_for(ALICE_GROUP)
    assert world.reader.listed == [], "these changes are loaded by name"
    for i in range(CHANGE_RING + 1):
        await world.writer.add(f"Another family fact {i}", FAM)
    caught_up = await world.cache.index_for(ALICE_GROUP)
    assert world.reader.listed == [[FAM.key()]], "too many changes to name: listed"
    scratch = await world.new_cache(MongoFactStore(world.db)).index_for(ALICE_GROUP)
    assert len(scratch.vectors) == len(scratch.facts) == 40 + 1 + CHANGE_RING + 1
    assert rows(caught_up) == rows(scratch)


async def test_a_cache_further_behind_than_the_record_lists_the_partition(world: World) -> None:
    await world.held(ALICE_GROUP)
    world.reader.listed.clear()
    for i in range(CHANGE_RING + 1):
        await world.writer.add(f"Another family fact {i}", FAM)
    assert await world.held(ALICE_GROUP) == await world.truth(ALICE_GROUP)
    assert world.reader.listed == [[FAM.key()]]


async def test_a_write_of_too_many_facts_to_name_lists_the_partition(world: World) -> None:
    held = await world.held(ALICE_GROUP)
    world.reader.listed.clear()
    await world.other.delete(sorted(held)[: CHANGE_IDS_MAX + 1])
    after = await world.held(ALICE_GROUP)
    assert after == await world.truth(ALICE_GROUP)
    assert len(after) == 40 - CHANGE_IDS_MAX - 1
    assert world.reader.listed == [[FAM.key()]]


async def test_a_version_moved_without_its_record_is_listed_then_named_again(
    world: World,
) -> None:
    """An older release (or a circle move) moves the version without naming the facts:
    the cache must list the partition, and the next ordinary change starts the record
    again."""
    await world.held(ALICE_GROUP)
    world.reader.listed.clear()
    sneaked, _ = await world.writer.add("Written by an older release", FAM)
    # what that release would have left: the version moved, the record not
    await world.db[PARTITIONS].update_one(
        {"_id": FAM.key()}, {"$inc": {"version": 1}, "$set": {"changes": []}}
    )
    after = await world.held(ALICE_GROUP)
    assert sneaked.id in after and after == await world.truth(ALICE_GROUP)
    assert world.reader.listed == [[FAM.key()]]

    await world.writer.add("The first change after that", FAM)  # starts the record again
    await world.held(ALICE_GROUP)
    world.reader.listed.clear()
    third, _ = await world.writer.add("And a change the record names", FAM)
    after = await world.held(ALICE_GROUP)
    assert third.id in after and after == await world.truth(ALICE_GROUP)
    assert world.reader.listed == []


async def test_a_record_naming_someone_elses_fact_leaks_nothing(world: World) -> None:
    """A group's record that names a DM fact (a corrupted or hostile record) makes the
    cache load that id, and the privacy filter inside the load keeps it out: the group
    index, and every other viewer's, hold only what they may see."""
    for v in (ALICE_GROUP, ALICE_DM, BOB_DM):
        await world.held(v)
    bobs = [f.id for f in await world.other.owned_by("bob")]
    alices = [f.id for f in await world.other.owned_by("alice")]
    assert bobs and alices
    for key in (FAM.key(), Partition.dm("alice").key()):
        await world.db[PARTITIONS].update_one(
            {"_id": key},
            {
                "$inc": {"version": 1, "ring_end": 1},
                "$push": {"changes": {"$each": [{"ids": bobs + alices}], "$slice": -CHANGE_RING}},
            },
        )
    world.reader.listed.clear()
    group_view = await world.held(ALICE_GROUP)
    alice_view = await world.held(ALICE_DM)
    bob_view = await world.held(BOB_DM)
    assert world.reader.listed == []  # the named path was taken, not the listing
    assert not set(bobs + alices) & set(group_view)
    assert set(alices) <= set(alice_view) and not set(bobs) & set(alice_view)
    assert set(bobs) <= set(bob_view) and not set(alices) & set(bob_view)
    for v, seen in ((ALICE_GROUP, group_view), (ALICE_DM, alice_view), (BOB_DM, bob_view)):
        assert seen == await world.truth(v)


async def test_a_first_load_reads_each_partition_whole_once(world: World) -> None:
    """A cache that holds nothing of a scope reads its partitions' facts in one streamed
    read, lists nothing and loads nothing by id, and holds exactly what the viewer may
    see: each current fact at its revision, checked against the store's own listing."""
    for v in (ALICE_GROUP, ALICE_DM, BOB_DM):
        cache = world.new_cache(world.reader)
        world.reader.listed.clear()
        world.reader.streamed.clear()
        index = await cache.index_for(v)
        expected = {
            f.id: (f.rev, f.content, f.pinned)
            for f in await world.other.list_visible(v)
            if is_visible(f.partition, v)
        }
        assert {i: (f.rev, f.content, f.pinned) for i, f in index.facts.items()} == expected
        assert world.reader.listed == []
        assert world.reader.streamed == [sorted(index.versions)]
        assert cache.loads == len(expected)


async def test_a_first_load_in_many_replies_holds_every_fact(world: World) -> None:
    """More facts than one reply carries: all of them arrive, none twice."""
    for i in range(LOAD_CHUNK + 7 - 40):
        await world.writer.add(f"Bulk family fact {i}", FAM)
    cache = world.new_cache(world.reader)
    index = await cache.index_for(ALICE_GROUP)
    assert len([f for f in index.facts.values() if f.partition == FAM]) == LOAD_CHUNK + 7
    assert cache.loads == LOAD_CHUNK + 7


async def test_a_first_load_cut_short_leaves_nothing_stale(world: World) -> None:
    """A first load that fails half way (the database gone) leaves the partition without
    a version, so the next search reads it whole again: a fact the cut load put in and
    that was retired meanwhile leaves the index, and what was added arrives."""

    class FailingHalfWay(CountingStore):
        def __init__(self, db: AsyncDatabase[dict[str, Any]]) -> None:
            super().__init__(db)
            self.failing = True
            self.yielded: list[str] = []

        async def partition_facts(
            self, viewer: Viewer, partition_keys: Sequence[str], *, batch: int
        ) -> AsyncIterator[LoadedFact]:
            async for fact in super().partition_facts(viewer, partition_keys, batch=batch):
                if self.failing and len(self.yielded) == 20:
                    raise ConnectionError("the database went away")
                self.yielded.append(fact.id)
                yield fact

    store = FailingHalfWay(world.db)
    cache = world.new_cache(store)
    with pytest.raises(ConnectionError):
        await cache.index_for(ALICE_GROUP)
    gone = store.yielded[0]
    await world.other.invalidate(gone, at=NOW + timedelta(hours=1), reason="no longer true")
    added, _ = await world.writer.add("The family adopted a cat", FAM)

    store.failing = False  # the database is back
    index = await cache.index_for(ALICE_GROUP)
    after = {i: (f.rev, f.content, f.pinned) for i, f in index.facts.items()}
    assert gone not in after and added.id in after
    assert after == await world.truth(ALICE_GROUP)
