"""The privacy rule holds in the real database: the filter returns exactly what the
predicate allows, for every viewer in every thread, and the predicate matches the table."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from pymongo import MongoClient

from integrations.mongo.connection import MongoHandle
from memory.privacy import is_visible, is_visible_doc, visibility_filter
from tests.helpers.cleanup import drop_test_database
from tests.helpers.privacy_world import World, oracle, worlds


def test_filter_equals_predicate_in_real_database(mongo: MongoHandle) -> None:
    # A synchronous client on the same real server keeps hypothesis' loop simple.
    assert mongo.lease is not None, "the property test must run on the embedded server"
    client: MongoClient[dict[str, object]] = MongoClient(mongo.lease.url, tz_aware=True)
    db = client[f"privacy_{uuid.uuid4().hex[:8]}"]
    coll = db["memory_facts"]
    counts = {"pairs": 0, "judged": 0, "visible": 0}

    @settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(world=worlds)
    def check(world: World) -> None:
        coll.delete_many({})
        docs = [
            {"_id": i, "content": f"memory {i}", **p.as_fields()}
            for i, p in enumerate(world.partitions)
        ]
        coll.insert_many(docs)
        for viewer in world.viewers():
            allowed = {i for i, p in enumerate(world.partitions) if is_visible(p, viewer)}
            expected = {i for i, p in enumerate(world.partitions) if oracle(p, viewer)}
            assert allowed == expected, (viewer, world)
            found = {d["_id"] for d in coll.find(visibility_filter(viewer), {"_id": 1})}
            assert found == allowed, f"filter and predicate disagree for {viewer}"
            assert all(is_visible_doc(d, viewer) for d in docs if d["_id"] in found)
            counts["pairs"] += 1
            counts["judged"] += len(docs)
            counts["visible"] += len(found)

    try:
        check()
    finally:
        client.drop_database(db.name)
        client.close()
    # Thousands of viewer/thread cases, tens of thousands of memories judged, and the
    # worlds are not degenerate: some memories were visible and most were not.
    assert counts["pairs"] >= 5_000
    assert counts["judged"] >= 3 * counts["pairs"]
    assert 0 < counts["visible"] < counts["judged"] // 2


def test_search_results_never_exceed_what_the_predicate_allows(mongo: MongoHandle) -> None:
    """The same random worlds, through the whole retrieval path (filter in the query,
    scope cache, both legs, fusion, blend): a query matching every memory returns exactly
    the memories the viewer may see, never one more."""
    import asyncio

    from pymongo import AsyncMongoClient

    from integrations.mongo.facts import MongoFactStore
    from memory.clock import ManualClock
    from memory.facts import FactWriter
    from memory.retrieval import Retriever
    from memory.search.app_backend import AppSearchBackend
    from memory.search.scope_index import ScopeIndexCache
    from migrations import MigrationContext, migrate
    from tests.helpers.fakes import HashEmbedder

    assert mongo.lease is not None
    counts = {"pairs": 0, "returned": 0}

    async def run(world: World) -> None:
        client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(
            mongo.lease.url if mongo.lease else "", tz_aware=True
        )
        name = f"privsearch_{uuid.uuid4().hex[:8]}"
        try:
            db = client[name]
            await migrate(MigrationContext(db, atlas_search=False, embedding_dims=64, log=print))
            store = MongoFactStore(db)
            embedder = HashEmbedder()
            clock = ManualClock(datetime(2026, 1, 5, tzinfo=UTC))
            writer = FactWriter(store, embedder, clock)
            contents = {}
            for i, p in enumerate(world.partitions):
                fact, created = await writer.add(f"secret note number {i}", p)
                if created:
                    contents[fact.content] = p
            cache = ScopeIndexCache(store, dimensions=64, model_name=embedder.model_name)
            retriever = Retriever(AppSearchBackend(cache), embedder, clock)
            for viewer in world.viewers():
                result = await retriever.search(viewer, "secret note number", limit=100)
                got = {f.fact.content for f in result.facts}
                allowed = {c for c, p in contents.items() if oracle(p, viewer)}
                assert got == allowed, f"search leaked or lost memories for {viewer}"
                counts["pairs"] += 1
                counts["returned"] += len(got)
        finally:
            await drop_test_database(client, name)
            await client.close()

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(world=worlds)
    def check(world: World) -> None:
        asyncio.run(run(world))

    check()
    assert counts["pairs"] >= 40 * 25 and counts["returned"] > 0
