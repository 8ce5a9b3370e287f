"""The mem0 semantic layer on the real embedded database, against local mem0 fakes.

The cloud index drives the real ``mem0.AsyncMemoryClient`` against
:class:`tests.helpers.fake_mem0.FakeMem0` (the Platform REST API on 127.0.0.1); the OSS
index runs the real ``mem0.AsyncMemory`` with an in-process qdrant and mem0's OpenAI
embedder pointed at :class:`tests.helpers.fake_mem0.FakeEmbeddings`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from integrations.mem0.cloud import Mem0CloudIndex
from integrations.mem0.lookup import semantic_leg
from integrations.mem0.mirror import delete_mirrors, mirror_fact
from integrations.mem0.oss import Mem0OssIndex
from integrations.mongo.facts import MongoFactStore
from memory.clock import ManualClock
from memory.errors import ConfigurationError, Unavailable
from memory.facts import FactWriter
from memory.models import Fact, Partition, Viewer
from memory.privacy import is_visible
from memory.retrieval import RetrievalConfig, Retriever
from memory.search.app_backend import AppSearchBackend
from memory.search.scope_index import ScopeIndexCache
from memory.semantic import FACT_ID_KEY, SemanticLeg, SemanticMetrics, semantic_user_id
from runtime.builders import build_semantic_index
from tests.conftest import make_settings
from tests.helpers.fake_mem0 import FakeEmbeddings, FakeMem0
from tests.helpers.fakes import HashEmbedder
from tests.helpers.world import dm, group, viewer

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
API_KEY = "m0-test-key"

ALICE_GROUP = viewer("alice", group("fam"), ["fam", "work"])
BOB_GROUP = viewer("bob", group("fam"), ["fam"])
ALICE_DM = viewer("alice", dm("alice"), ["fam", "work"])
BOB_DM = viewer("bob", dm("bob"), ["fam"])
CAROL_WORK = viewer("carol", group("work"), ["work"])
CAROL_DM = viewer("carol", dm("carol"), ["work"])
# Viewers who must see nothing of the seed (or only what the table allows).
DAVE_NOWHERE = viewer("dave", dm("dave"), [])
DAVE_IN_FAM_GROUP_NOT_MEMBER = viewer("dave", group("fam"), [])
BOB_IN_ALICES_DM = viewer("bob", dm("alice"), ["fam"])
ALL_VIEWERS = [
    ALICE_GROUP,
    BOB_GROUP,
    ALICE_DM,
    BOB_DM,
    CAROL_WORK,
    CAROL_DM,
    DAVE_NOWHERE,
    DAVE_IN_FAM_GROUP_NOT_MEMBER,
    BOB_IN_ALICES_DM,
]

SURPRISE = "Alice is planning a surprise party for Bob on Friday"
SUSHI = "Bob loves sushi and ramen"
SEED = [
    (SURPRISE, Partition.dm("alice")),
    ("The family is going to Lisbon in May", Partition.circle("fam")),
    (SUSHI, Partition.member("fam", "bob")),
    ("Alice is allergic to peanuts", Partition.member("fam", "alice")),
    ("The work team offsite is in Porto on Friday", Partition.circle("work")),
    ("Carol thinks the Friday meeting is pointless", Partition.dm("carol")),
]
EVERYTHING = "Alice Bob family work team Carol Friday Lisbon sushi peanuts Porto meeting party"


class World:
    """The seeded facts, their store, and the pieces a retriever is built from."""

    def __init__(self, db: AsyncDatabase[dict[str, Any]]) -> None:
        self.db = db
        self.store = MongoFactStore(db)
        self.clock = ManualClock(NOW)
        self.embedder = HashEmbedder()
        self.writer = FactWriter(self.store, self.embedder, self.clock)
        self.facts: dict[str, Fact] = {}

    async def seed(self) -> None:
        for content, partition in SEED:
            fact, _ = await self.writer.add(content, partition)
            self.facts[content] = fact

    async def mirror_all(self, index: Any, metrics: SemanticMetrics) -> None:
        for content, fact in list(self.facts.items()):
            await mirror_fact(self.store, index, fact, metrics)
            stored = await self.store.get(fact.id)
            assert stored is not None
            self.facts[content] = stored

    def retriever(self, leg: SemanticLeg | None, **config: Any) -> Retriever:
        # What a leg finds is tested here, not how fast: on a loaded machine the default
        # limit (0.45 s) turned a working local mem0 leg into "timeout". The limit itself
        # is tested on its own (test_mem0_slow_times_out_within_budget passes 0.2 s).
        config.setdefault("leg_timeout_s", 10.0)
        cache = ScopeIndexCache(self.store, dimensions=64, model_name=self.embedder.model_name)
        return Retriever(
            AppSearchBackend(cache),
            self.embedder,
            self.clock,
            RetrievalConfig(**config),
            extra_legs={"mem0": leg} if leg is not None else None,
        )

    async def visible_ids(self, v: Viewer) -> set[str]:
        return {f.id for f in await self.store.all_for_audit() if is_visible(f.partition, v)}


@pytest.fixture
def fake() -> Iterator[FakeMem0]:
    # A little background processing, as the service has: adds answer PENDING first.
    with FakeMem0(API_KEY, processing_s=0.03) as server:
        yield server


@pytest.fixture
async def cloud(fake: FakeMem0, tmp_path: Path) -> AsyncIterator[Mem0CloudIndex]:
    index = await Mem0CloudIndex.connect(
        API_KEY, host=fake.base_url, data_dir=tmp_path, id_wait_s=2.0, timeout_s=2.0
    )
    yield index
    await index.aclose()


@pytest.fixture
async def world(migrated_db: AsyncDatabase[dict[str, Any]]) -> World:
    w = World(migrated_db)
    await w.seed()
    return w


@pytest.fixture
async def mirrored(world: World, cloud: Mem0CloudIndex) -> tuple[World, SemanticMetrics]:
    metrics = SemanticMetrics()
    await world.mirror_all(cloud, metrics)
    return world, metrics


def leg_for(world: World, index: Any, metrics: SemanticMetrics) -> SemanticLeg:
    return semantic_leg(index, world.db, metrics)


# --- writes -----------------------------------------------------------------------


async def test_mirror_stores_verbatim_in_the_partition_and_keeps_the_id(
    mirrored: tuple[World, SemanticMetrics], fake: FakeMem0
) -> None:
    world, metrics = mirrored
    assert metrics.writes == len(SEED) and metrics.write_errors == metrics.writes_pending == 0
    for content, fact in world.facts.items():
        assert fact.mem0_id is not None
        stored = fake.memories[fact.mem0_id]
        assert stored.memory == content
        assert stored.user_id == semantic_user_id(fact.partition) == fact.partition.key()
        assert stored.metadata[FACT_ID_KEY] == fact.id
        assert stored.metadata["visibility"] == fact.partition.visibility.value
        assert stored.metadata["circle_id"] == fact.partition.circle_id
        assert stored.metadata["owner_user_id"] == fact.partition.owner_user_id
    adds = fake.calls("POST", "/v3/memories/add/")
    assert len(adds) == len(SEED)
    assert all(a.body["infer"] is False for a in adds)
    # The add answered PENDING: the ids came from polling the documented event endpoint.
    assert fake.calls("GET", "/v1/event/")


async def test_mirror_finds_the_id_by_listing_when_the_event_does_not_name_it(
    world: World, cloud: Mem0CloudIndex, fake: FakeMem0
) -> None:
    fake.event_results_with_ids = False
    fact = world.facts[SUSHI]
    mem0_id = await mirror_fact(world.store, cloud, fact)
    assert mem0_id is not None and fake.memories[mem0_id].memory == SUSHI
    stored = await world.store.get(fact.id)
    assert stored is not None and stored.mem0_id == mem0_id
    assert fake.calls("POST", "/v3/memories/")  # the listing fallback ran


async def test_mirror_of_a_reworded_fact_replaces_the_old_copy(
    mirrored: tuple[World, SemanticMetrics], cloud: Mem0CloudIndex, fake: FakeMem0
) -> None:
    world, metrics = mirrored
    old = world.facts[SUSHI]
    reworded = await world.writer.reword(old.id, "Bob loves sushi, ramen and udon")
    assert reworded is not None and reworded.mem0_id == old.mem0_id
    new_id = await mirror_fact(world.store, cloud, reworded, metrics)
    assert new_id is not None and new_id != old.mem0_id
    assert old.mem0_id not in fake.memories
    assert fake.memories[new_id].memory == "Bob loves sushi, ramen and udon"


@pytest.mark.parametrize("fault", ["down", "500"])
async def test_mirror_fails_soft_and_the_local_fact_stays(
    world: World, cloud: Mem0CloudIndex, fake: FakeMem0, fault: str
) -> None:
    if fault == "down":
        fake.go_down()
    else:
        fake.fail_status = 500
    metrics = SemanticMetrics()
    fact = world.facts[SUSHI]
    assert await mirror_fact(world.store, cloud, fact, metrics) is None
    assert metrics.write_errors == 1 and metrics.writes == 0
    stored = await world.store.get(fact.id)
    assert stored is not None and stored.content == SUSHI and stored.mem0_id is None


async def test_forget_deletes_the_copies_and_is_idempotent(
    mirrored: tuple[World, SemanticMetrics], cloud: Mem0CloudIndex, fake: FakeMem0
) -> None:
    world, metrics = mirrored
    fact = world.facts[SUSHI]
    assert await delete_mirrors(cloud, [fact], metrics) == 1
    assert fact.mem0_id not in fake.memories
    await delete_mirrors(cloud, [fact], metrics)  # already gone: not an error
    fake.go_down()
    with pytest.raises(Unavailable):
        await delete_mirrors(cloud, [world.facts[SURPRISE]], metrics)


# --- the leg -----------------------------------------------------------------------


async def test_leg_maps_hits_back_to_local_facts(
    mirrored: tuple[World, SemanticMetrics], cloud: Mem0CloudIndex, fake: FakeMem0
) -> None:
    world, _ = mirrored
    metrics = SemanticMetrics()
    leg = leg_for(world, cloud, metrics)
    hits = await leg(BOB_DM, "what food does bob love? sushi ramen", 10)
    assert next(iter(sorted(hits, key=lambda i: -hits[i]))) == world.facts[SUSHI].id
    assert set(hits) <= await world.visible_ids(BOB_DM)
    # One mem0 search per partition Bob may see from his DM, each scoped by user_id.
    searched = [r.body["filters"] for r in fake.calls("POST", "/v3/memories/search/")]
    assert sorted(f["user_id"] for f in searched) == ["shared:fam:-", "shared:fam:bob"]
    assert metrics.searches == 1 and metrics.dropped_unknown == metrics.dropped_foreign == 0

    result = await world.retriever(leg).search(BOB_DM, "sushi ramen", limit=5)
    assert result.legs["mem0"].startswith("ok")
    assert result.facts[0].fact.content == SUSHI


async def test_hit_from_a_dm_moved_into_a_group_partition_is_dropped(
    mirrored: tuple[World, SemanticMetrics], cloud: Mem0CloudIndex, fake: FakeMem0
) -> None:
    """A poisoned mem0 returns Alice's DM fact from the family's circle partition."""
    world, _ = mirrored
    secret = world.facts[SURPRISE]
    assert secret.mem0_id is not None
    fake.insert(SURPRISE, user_id="shared:fam:-", memory_id=secret.mem0_id)
    metrics = SemanticMetrics()
    leg = leg_for(world, cloud, metrics)
    for v in (BOB_GROUP, BOB_DM, ALICE_GROUP):
        hits = await leg(v, "surprise party for Bob on Friday", 10)
        assert secret.id not in hits, v
    # The privacy filter inside the Mongo query found no record Bob may see ...
    assert metrics.dropped_unknown >= 2
    # ... and for Alice in the group, the fact is hers but still a DM: not visible there.
    result = await world.retriever(leg).search(BOB_GROUP, "surprise party Friday", limit=10)
    assert SURPRISE not in [f.fact.content for f in result.facts]


async def test_hit_resolving_to_another_visible_partition_is_dropped(
    mirrored: tuple[World, SemanticMetrics], cloud: Mem0CloudIndex, fake: FakeMem0
) -> None:
    """mem0 disagrees with Alfred about a fact's partition: the hit is not trusted."""
    world, _ = mirrored
    sushi = world.facts[SUSHI]  # member bob's, from the group
    assert sushi.mem0_id is not None
    fake.insert(SUSHI, user_id="shared:fam:-", memory_id=sushi.mem0_id)
    metrics = SemanticMetrics()
    hits = await leg_for(world, cloud, metrics)(BOB_DM, "sushi ramen", 10)
    assert sushi.id not in hits
    assert metrics.dropped_foreign == 1


async def test_hits_with_no_local_record_are_dropped(
    mirrored: tuple[World, SemanticMetrics], cloud: Mem0CloudIndex, fake: FakeMem0
) -> None:
    world, _ = mirrored
    fake.insert("Bob secretly hates sushi", user_id="shared:fam:bob")  # never stored by Alfred
    forgotten = world.facts["Alice is allergic to peanuts"]
    await world.store.delete([forgotten.id])  # forgotten locally, the copy still in mem0
    metrics = SemanticMetrics()
    leg = leg_for(world, cloud, metrics)
    hits = await leg(BOB_DM, "Bob sushi", 10)
    assert set(hits) == {world.facts[SUSHI].id}
    hits = await leg(ALICE_DM, "Alice allergic to peanuts", 10)
    assert forgotten.id not in hits
    assert metrics.dropped_unknown == 2


async def test_leaky_mem0_ignoring_user_ids_never_leaks(
    mirrored: tuple[World, SemanticMetrics], cloud: Mem0CloudIndex, fake: FakeMem0
) -> None:
    world, _ = mirrored
    fake.leak_across_users = True
    metrics = SemanticMetrics()
    hits = await leg_for(world, cloud, metrics)(CAROL_WORK, EVERYTHING, 50)
    assert set(hits) == {world.facts["The work team offsite is in Porto on Friday"].id}
    assert metrics.dropped_unknown + metrics.dropped_foreign == len(SEED) - 1


# --- faults ------------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["down", "500"])
async def test_mem0_down_the_other_legs_answer(
    mirrored: tuple[World, SemanticMetrics], cloud: Mem0CloudIndex, fake: FakeMem0, fault: str
) -> None:
    world, _ = mirrored
    metrics = SemanticMetrics()
    retriever = world.retriever(leg_for(world, cloud, metrics))
    await retriever.search(BOB_DM, "sushi", limit=5)  # warm the local index
    if fault == "down":
        fake.go_down()
    else:
        fake.fail_status = 500
    result = await retriever.search(BOB_DM, "sushi ramen", limit=5)
    assert result.legs["mem0"].startswith("failed")
    assert result.facts[0].fact.content == SUSHI
    assert metrics.fallbacks == 1 and metrics.errors >= 1 and metrics.timeouts == 0


async def test_one_failing_partition_does_not_sink_the_leg(
    mirrored: tuple[World, SemanticMetrics], cloud: Mem0CloudIndex
) -> None:
    world, _ = mirrored

    class HalfBroken:
        name = "half-broken"

        async def add(self, fact: Fact) -> str | None:
            return await cloud.add(fact)

        async def delete(self, mem0_ids: Sequence[str]) -> None:
            await cloud.delete(mem0_ids)

        async def search(self, partition_key: str, query: str, k: int) -> list[tuple[str, float]]:
            if partition_key == "shared:fam:-":
                raise Unavailable("mem0", "search failed (test)")
            return await cloud.search(partition_key, query, k)

        async def aclose(self) -> None:
            return None

    metrics = SemanticMetrics()
    hits = await leg_for(world, HalfBroken(), metrics)(BOB_DM, "Bob sushi family Lisbon", 10)
    assert world.facts[SUSHI].id in hits
    assert metrics.partial == 1 and metrics.errors == 1 and metrics.fallbacks == 0


async def test_mem0_slow_times_out_within_budget(
    mirrored: tuple[World, SemanticMetrics], cloud: Mem0CloudIndex, fake: FakeMem0
) -> None:
    world, _ = mirrored
    metrics = SemanticMetrics()
    retriever = world.retriever(leg_for(world, cloud, metrics), leg_timeout_s=0.2)
    await retriever.search(BOB_DM, "sushi", limit=5)  # warm the local index
    fake.delay_s = 1.5
    started = time.perf_counter()
    result = await retriever.search(BOB_DM, "sushi ramen", limit=5)
    elapsed = time.perf_counter() - started
    assert elapsed < 0.5, elapsed  # the reply-path budget (DESIGN.md §6)
    assert result.legs["mem0"] == "timeout"
    assert result.facts[0].fact.content == SUSHI
    assert metrics.timeouts == 1 and metrics.fallbacks == 1
    fake.delay_s = 0.0


async def test_own_leg_timeout_counts_too(
    mirrored: tuple[World, SemanticMetrics], cloud: Mem0CloudIndex, fake: FakeMem0
) -> None:
    world, _ = mirrored
    metrics = SemanticMetrics()
    leg = semantic_leg(cloud, world.db, metrics, timeout_s=0.1)
    fake.delay_s = 1.0
    with pytest.raises(TimeoutError):
        await leg(BOB_DM, "sushi", 5)
    fake.delay_s = 0.0
    assert metrics.timeouts == 1 and metrics.fallbacks == 1


async def test_latency_is_sampled_for_percentiles(
    mirrored: tuple[World, SemanticMetrics], cloud: Mem0CloudIndex
) -> None:
    world, _ = mirrored
    metrics = SemanticMetrics()
    leg = leg_for(world, cloud, metrics)
    for query in ["sushi", "Lisbon", "Friday", "peanuts", "party"] * 4:
        await leg(ALICE_DM, query, 10)
    snap = metrics.snapshot()
    assert snap["searches"] == 20 and len(metrics.latency_ms) == 20
    p50, p95, p99 = snap["latency_p50_ms"], snap["latency_p95_ms"], snap["latency_p99_ms"]
    assert p50 is not None and p95 is not None and p99 is not None
    assert 0 < p50 <= p95 <= p99 == max(metrics.latency_ms)


# --- privacy, thoroughly ------------------------------------------------------------


@pytest.mark.parametrize("leaky", [False, True], ids=["honest-mem0", "leaky-mem0"])
async def test_mem0_leg_results_are_always_visible(
    mirrored: tuple[World, SemanticMetrics],
    cloud: Mem0CloudIndex,
    fake: FakeMem0,
    leaky: bool,
) -> None:
    """For every viewer and query, whatever mem0 answers, only visible facts come back."""
    world, _ = mirrored
    fake.leak_across_users = leaky
    # Poison too: every DM copy is also filed under every circle partition.
    for fact in world.facts.values():
        if fact.partition.circle_id is None:
            for circle in ("fam", "work"):
                fake.insert(fact.content, user_id=f"shared:{circle}:-")
    metrics = SemanticMetrics()
    leg = leg_for(world, cloud, metrics)
    retriever = world.retriever(leg)
    queries = [EVERYTHING, *(content for content, _ in SEED)]
    for v in ALL_VIEWERS:
        allowed = await world.visible_ids(v)
        for query in queries:
            hits = await leg(v, query, 50)
            assert set(hits) <= allowed, (v, query)
            result = await retriever.search(v, query, limit=15)
            assert all(is_visible(f.fact.partition, v) for f in result.facts), (v, query)
            assert {f.fact.id for f in result.facts} <= allowed
        if not leaky:
            # Not over-filtered: each visible fact is found by its own words.
            for content, fact in world.facts.items():
                if fact.id in allowed:
                    assert fact.id in await leg(v, content, 50), (v, content)


# --- OSS mode ------------------------------------------------------------------------


@pytest.fixture
def embeddings() -> Iterator[FakeEmbeddings]:
    with FakeEmbeddings(dimensions=64) as server:
        yield server


async def test_oss_round_trip_with_a_local_store(
    world: World, embeddings: FakeEmbeddings, tmp_path: Path
) -> None:
    settings = make_settings(tmp_path, mem0_mode="oss", openai_base_url=embeddings.openai_base_url)
    index = await build_semantic_index(settings, embedding_dims=64, vector_path=tmp_path / "qdrant")
    assert isinstance(index, Mem0OssIndex)
    try:
        metrics = SemanticMetrics()
        await world.mirror_all(index, metrics)
        assert metrics.writes == len(SEED)
        assert all(f.mem0_id for f in world.facts.values())
        leg = leg_for(world, index, metrics)
        hits = await leg(BOB_DM, "what does bob love? sushi and ramen", 10)
        assert max(hits, key=lambda i: hits[i]) == world.facts[SUSHI].id
        assert set(hits) <= await world.visible_ids(BOB_DM)
        for v in ALL_VIEWERS:
            assert set(await leg(v, EVERYTHING, 50)) <= await world.visible_ids(v), v
        result = await world.retriever(leg).search(ALICE_DM, "surprise party", limit=5)
        assert result.legs["mem0"].startswith("ok") and result.facts[0].fact.content == SURPRISE
        # Forget: the copy and its history text are gone.
        sushi = world.facts[SUSHI]
        assert sushi.mem0_id is not None
        await delete_mirrors(index, [sushi], metrics)
        assert sushi.id not in await leg(BOB_DM, "sushi ramen", 10)
        assert index._memory.db.get_history(sushi.mem0_id) == []
        assert embeddings.requests, "mem0 embedded through the injected endpoint"
    finally:
        await index.aclose()


async def test_oss_embedder_down_fails_the_leg_not_the_reply(
    world: World, embeddings: FakeEmbeddings, tmp_path: Path
) -> None:
    index = await Mem0OssIndex.create(
        embedder_base_url=embeddings.openai_base_url,
        embedder_api_key=None,
        embedding_dims=64,
        data_dir=tmp_path,
        embed_timeout_s=1.0,
    )
    try:
        metrics = SemanticMetrics()
        await world.mirror_all(index, metrics)
        embeddings.fail_status = 500
        retriever = world.retriever(leg_for(world, index, metrics))
        result = await retriever.search(BOB_DM, "sushi ramen", limit=5)
        assert result.legs["mem0"].startswith("failed")
        assert result.facts[0].fact.content == SUSHI
        assert metrics.fallbacks == 1
    finally:
        await index.aclose()


# --- configuration -------------------------------------------------------------------


async def test_build_semantic_index_follows_the_settings(tmp_path: Path, fake: FakeMem0) -> None:
    assert await build_semantic_index(make_settings(tmp_path)) is None
    assert (
        await build_semantic_index(make_settings(tmp_path, mem0_mode="off", mem0_api_key=API_KEY))
        is None
    )
    with pytest.raises(ConfigurationError):
        await build_semantic_index(make_settings(tmp_path, mem0_mode="cloud"))
    with pytest.raises(ConfigurationError):
        await build_semantic_index(make_settings(tmp_path, mem0_mode="oss"))
    with pytest.raises(ConfigurationError):
        # Settings refuse it; a copy made in code is still caught here
        unknown = make_settings(tmp_path).model_copy(update={"mem0_mode": "sometimes"})
        await build_semantic_index(unknown)
    cloud = await build_semantic_index(
        make_settings(tmp_path, mem0_api_key=API_KEY, mem0_host=fake.base_url)
    )
    assert isinstance(cloud, Mem0CloudIndex)
    await cloud.aclose()
    with pytest.raises(Unavailable):
        await build_semantic_index(
            make_settings(tmp_path, mem0_api_key="wrong-key", mem0_host=fake.base_url)
        )


async def test_connect_to_an_unreachable_service_is_unavailable(
    tmp_path: Path, fake: FakeMem0
) -> None:
    fake.go_down()
    with pytest.raises(Unavailable):
        await asyncio.wait_for(
            Mem0CloudIndex.connect(API_KEY, host=fake.base_url, data_dir=tmp_path), 5
        )
