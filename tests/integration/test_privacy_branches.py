"""The privacy filter split into plain equalities (for a server that plans indexes only
from those) selects exactly what the filter selects, and the reply's combined memory read
built on it shows a viewer no unformed message of a partition they may not see."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from pymongo import MongoClient
from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo import turn_memo
from integrations.mongo.atlas_search import AtlasSearch
from integrations.mongo.connection import MongoHandle
from integrations.mongo.directory import history_from
from integrations.mongo.facts import MongoFactStore
from integrations.mongo.turn_reads import HISTORY_PREFETCH, memory_snapshot, messages_part
from memory.constants import MESSAGES
from memory.ids import content_hash, new_id
from memory.models import Fact, Partition, Thread, ThreadKind, Viewer
from memory.privacy import and_visible, and_visible_branches, is_visible, visibility_branches
from tests.helpers.privacy_world import World, worlds


def test_branches_select_exactly_what_the_filter_selects(mongo: MongoHandle) -> None:
    assert mongo.lease is not None, "the property test must run on the embedded server"
    client: MongoClient[dict[str, Any]] = MongoClient(mongo.lease.url, tz_aware=True)
    db = client[f"branches_{uuid.uuid4().hex[:8]}"]
    coll = db["memory_facts"]
    seen = {"viewers": 0, "visible": 0}

    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(world=worlds)
    def check(world: World) -> None:
        coll.delete_many({})
        coll.insert_many([{"_id": i, **p.as_fields()} for i, p in enumerate(world.partitions)])
        for viewer in world.viewers():
            allowed = sorted(i for i, p in enumerate(world.partitions) if is_visible(p, viewer))
            branches = visibility_branches(viewer)
            for branch in branches:  # plain equalities only: no operator anywhere
                assert all(not isinstance(v, dict) for v in branch.values()), branch
                assert not any(k.startswith("$") for k in branch), branch
            union = [d["_id"] for b in branches for d in coll.find(b, {"_id": 1})]
            assert sorted(union) == allowed, f"branches and predicate disagree for {viewer}"
            seen["viewers"] += 1
            seen["visible"] += len(union)

    try:
        check()
    finally:
        client.drop_database(db.name)
        client.close()
    assert seen["viewers"] >= 2_000 and seen["visible"] > 0


def test_a_query_may_not_replace_the_filter() -> None:
    viewer = Viewer(
        user_id="a", thread=Thread(id="dm:a", kind=ThreadKind.DM, user_id="a"), circle_ids={"c"}
    )
    for bad in ({"visibility": "dm"}, {"owner_user_id": "b"}, {"$or": [{}]}):
        try:
            and_visible_branches(viewer, bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad} was merged into the privacy filter")


NOW = datetime(2026, 6, 1, 9, tzinfo=UTC)
PARTITIONS = {
    "a_dm": Partition.dm("a"),
    "b_dm": Partition.dm("b"),
    "c_circle": Partition.circle("c"),
    "c_a": Partition.member("c", "a"),
    "c_b": Partition.member("c", "b"),
    "d_circle": Partition.circle("d"),
}


async def test_the_reply_read_of_unformed_messages_never_leaks(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    docs = []
    for n, (name, p) in enumerate(PARTITIONS.items()):
        for k, (role, formed, handled) in enumerate(
            [
                ("user", False, False),
                ("user", False, True),
                ("user", True, False),
                ("agent", False, False),
            ]
        ):
            docs.append(
                {
                    "_id": f"{name}:{k}",
                    "thread_id": f"t:{name}",
                    "role": role,
                    "formed": formed,
                    "handled": handled,
                    "text": f"said in {name}",
                    "created_at": NOW + timedelta(minutes=n * 4 + k),
                    **p.as_fields(),
                }
            )
    await migrated_db[MESSAGES].insert_many(docs)
    member_of = {"a": {"c"}, "b": {"c", "d"}}
    threads = [
        Thread(id="t:c", kind=ThreadKind.GROUP, circle_id="c"),
        Thread(id="t:d", kind=ThreadKind.GROUP, circle_id="d"),
        Thread(id="t:a_dm", kind=ThreadKind.DM, user_id="a"),
        Thread(id="t:b_dm", kind=ThreadKind.DM, user_id="b"),
    ]
    checked = 0
    for user, circles in member_of.items():
        for thread in threads:
            viewer = Viewer(user_id=user, thread=thread, circle_ids=frozenset(circles))
            query = {"formed": False, "role": "user", "handled": {"$ne": True}}
            expected = [
                d["_id"]
                async for d in migrated_db[MESSAGES]
                .find(and_visible(viewer, query))
                .sort([("created_at", -1), ("_id", -1)])
            ]
            with turn_memo.reply_turn():
                memo = turn_memo.current()
                assert memo is not None
                parts = await memory_snapshot(migrated_db, memo, viewer)
            got = [d["_id"] for d in messages_part(parts[MESSAGES], "unformed")]
            assert got == expected, (viewer, got, expected)
            for doc in docs:
                if doc["_id"] in got:
                    assert is_visible(Partition.from_fields(doc), viewer), (viewer, doc["_id"])
            checked += len(got)
    # Some viewers saw unformed messages (a's own DM, the circles' groups), none saw b's DM
    # from a's side or the other way round.
    assert checked > 0


def test_the_history_bound_never_drops_a_message_of_the_newest() -> None:
    times = [NOW + timedelta(seconds=s) for s in range(HISTORY_PREFETCH - 1)]
    assert history_from({"recent_at": times}, [NOW]) is not None  # enough known: bounded
    assert history_from({"recent_at": times[1:]}, [NOW + timedelta(days=1)]) is None  # one short
    # Out of order (a replayed message stamped earlier): the bound is the oldest, so every
    # one of the last user messages is still inside it.
    late = NOW - timedelta(hours=3)
    bound = history_from({"recent_at": times}, [late])
    assert bound == late
    assert all(t >= bound for t in [*times, late][-HISTORY_PREFETCH:])


def fact_in(partition: Partition, content: str) -> Fact:
    return Fact(
        id=new_id(),
        content=content,
        hash=content_hash(content),
        partition=partition,
        valid_at=NOW,
        created_at=NOW,
        updated_at=NOW,
    )


def everyone() -> list[Viewer]:
    """a (of circle c) and b (of c and d), each in both groups and both DMs."""
    threads = [
        Thread(id="t:c", kind=ThreadKind.GROUP, circle_id="c"),
        Thread(id="t:d", kind=ThreadKind.GROUP, circle_id="d"),
        Thread(id="t:a_dm", kind=ThreadKind.DM, user_id="a"),
        Thread(id="t:b_dm", kind=ThreadKind.DM, user_id="b"),
    ]
    member_of = {"a": {"c"}, "b": {"c", "d"}}
    return [
        Viewer(user_id=user, thread=thread, circle_ids=frozenset(circles))
        for user, circles in member_of.items()
        for thread in threads
    ]


async def three_in_each_partition_and_one_retired(
    store: MongoFactStore, retired_in: str
) -> tuple[dict[str, Partition], str]:
    """Three current facts in each of :data:`PARTITIONS` (id to partition), and the id of
    one more, retired, in the partition named ``retired_in``."""
    ids: dict[str, Partition] = {}
    for name, partition in PARTITIONS.items():
        for n in range(3):
            fact = fact_in(partition, f"{name} note {n}")
            await store.add(fact)
            ids[fact.id] = partition
    retired = fact_in(PARTITIONS[retired_in], f"{retired_in} retired")
    await store.add(retired)
    await store.invalidate(retired.id, at=NOW)
    return ids, retired.id


async def test_loading_facts_by_id_returns_only_the_viewers(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    """The store loads facts by id in two stages (the ids, then the filter): ask for
    every fact of every partition, and each viewer gets exactly the ones it may see."""
    store = MongoFactStore(migrated_db)
    ids, retired = await three_in_each_partition_and_one_retired(store, "a_dm")
    asked = [*ids, retired, "no-such-fact"]
    for viewer in everyone():
        loaded = await store.load_facts(viewer, asked)
        expected = sorted(i for i, p in ids.items() if is_visible(p, viewer))
        assert sorted(f.id for f in loaded) == expected, f"{viewer.user_id} in {viewer.thread.id}"


async def test_an_index_catching_up_by_id_gets_only_the_viewers_facts(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    """A search index catches up on the facts a change named by loading them by id, each
    vector read as float32: ask for every fact of every partition as every viewer, and
    each gets exactly the ones it may see, with the vectors the store holds."""
    store = MongoFactStore(migrated_db)
    ids, retired = await three_in_each_partition_and_one_retired(store, "c_circle")
    vectors: dict[str, list[float]] = {}
    for name, partition in PARTITIONS.items():
        fact = fact_in(partition, f"{name} has a vector").model_copy(
            update={"embedding": [0.5, -0.25, 0.125], "embedding_model": "m", "embedding_dims": 3}
        )
        await store.add(fact)
        ids[fact.id] = partition
        vectors[fact.id] = [0.5, -0.25, 0.125]
    asked = [*ids, retired, "no-such-fact"]
    for viewer in everyone():
        loaded = await store.indexable_facts(viewer, asked)
        expected = sorted(i for i, p in ids.items() if is_visible(p, viewer))
        assert sorted(f.id for f in loaded) == expected, f"{viewer.user_id} in {viewer.thread.id}"
        for held in loaded:
            assert held.fact.partition == ids[held.id]
            assert held.fact.embedding is None, "the vector is beside the fact, not on it"
            if held.id in vectors:
                assert held.vector is not None and held.vector.dtype == np.float32
                assert held.vector.tolist() == vectors[held.id]
            else:
                assert held.vector is None


async def test_atlas_resolves_to_the_viewers_facts_only_and_reads_no_vectors(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    """On Atlas a search resolves the legs' ids to candidates through the store's load by
    id, without the vectors it does not rank by: ask for every fact of every partition as
    every viewer, and each gets exactly the ones it may see, in their own partitions."""

    class Recording(MongoFactStore):
        """The real store, noting whether each load by id asked for the vectors."""

        def __init__(self, db: AsyncDatabase[dict[str, Any]]) -> None:
            super().__init__(db)
            self.with_vectors: list[bool] = []

        async def load_facts(
            self, viewer: Viewer, ids: Sequence[str], *, with_embeddings: bool = True
        ) -> list[Fact]:
            self.with_vectors.append(with_embeddings)
            return await super().load_facts(viewer, ids, with_embeddings=with_embeddings)

    store = Recording(migrated_db)
    ids, retired = await three_in_each_partition_and_one_retired(store, "b_dm")
    embedded = fact_in(PARTITIONS["c_circle"], "c has a vector").model_copy(
        update={"embedding": [0.5, 0.25], "embedding_model": "m", "embedding_dims": 2}
    )
    await store.add(embedded)
    ids[embedded.id] = PARTITIONS["c_circle"]
    asked = [*ids, retired, "no-such-fact"]
    for viewer in everyone():
        resolved = await AtlasSearch(migrated_db, store, viewer, []).resolve(asked)
        expected = sorted(i for i, p in ids.items() if is_visible(p, viewer))
        assert sorted(resolved) == expected, f"{viewer.user_id} in {viewer.thread.id}"
        assert all(c.partition == ids[i] for i, c in resolved.items())
    assert store.with_vectors == [False] * len(everyone()), "resolving reads no vectors"
    group_c = everyone()[0]
    bare = {f.id: f for f in await store.load_facts(group_c, asked, with_embeddings=False)}
    full = {f.id: f for f in await store.load_facts(group_c, asked)}
    assert bare.keys() == full.keys() and embedded.id in bare
    assert bare[embedded.id].embedding is None and full[embedded.id].embedding == [0.5, 0.25]
    assert bare[embedded.id] == full[embedded.id].model_copy(update={"embedding": None})


async def test_loading_whole_partitions_returns_only_the_viewers(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    """An index's first load reads whole partitions (the partition keys, then the filter):
    ask for every partition as every viewer, a few per reply, and each gets exactly the
    current facts it may see, none twice."""
    store = MongoFactStore(migrated_db)
    ids, _ = await three_in_each_partition_and_one_retired(store, "c_circle")
    keys = sorted({p.key() for p in PARTITIONS.values()})
    for viewer in everyone():
        loaded = [f.id async for f in store.partition_facts(viewer, keys, batch=2)]
        expected = sorted(i for i, p in ids.items() if is_visible(p, viewer))
        assert sorted(loaded) == expected, f"{viewer.user_id} in {viewer.thread.id}"
        assert len(loaded) == len(set(loaded))
