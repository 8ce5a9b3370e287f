"""Hybrid retrieval on the real embedded database: relevance, privacy, cache, faults."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.facts import MongoFactStore
from integrations.mongo.journal import MongoJournal
from memory.clock import ManualClock
from memory.facts import FactWriter
from memory.models import Category, Message, Partition, Role, Viewer
from memory.ports import Embedder, LoadedFact
from memory.retrieval import RetrievalConfig, Retriever
from memory.search.app_backend import AppSearchBackend
from memory.search.recent import RecentLeg
from memory.search.scope_index import ScopeIndexCache
from tests.helpers.fakes import (
    FailingEmbedder,
    HashEmbedder,
    SlowEmbedder,
    WrongDimensionEmbedder,
)
from tests.helpers.world import dm, group, viewer

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

ALICE_GROUP = viewer("alice", group("fam"), ["fam", "work"])
BOB_GROUP = viewer("bob", group("fam"), ["fam"])
ALICE_DM = viewer("alice", dm("alice"), ["fam", "work"])
BOB_DM = viewer("bob", dm("bob"), ["fam"])
CAROL_WORK = viewer("carol", group("work"), ["work"])
CAROL_DM = viewer("carol", dm("carol"), ["work"])

SEED = [
    ("Alice is planning a surprise party for Bob on Friday", Partition.dm("alice")),
    ("The family is going to Lisbon in May", Partition.circle("fam")),
    ("Bob loves sushi and ramen", Partition.member("fam", "bob")),
    ("Alice is allergic to peanuts", Partition.member("fam", "alice")),
    ("The work team offsite is in Porto on Friday", Partition.circle("work")),
    ("Carol thinks the Friday meeting is pointless", Partition.dm("carol")),
]


def make_retriever(
    store: MongoFactStore, embedder: Embedder, clock: ManualClock, **config: Any
) -> Retriever:
    cache = ScopeIndexCache(store, dimensions=embedder.dimensions, model_name=embedder.model_name)
    return Retriever(
        AppSearchBackend(cache),
        embedder,
        clock,
        RetrievalConfig(**config),
        on_access=store.record_access,
    )


@pytest.fixture
async def world(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> tuple[MongoFactStore, FactWriter, ManualClock]:
    store = MongoFactStore(migrated_db)
    clock = ManualClock(NOW)
    writer = FactWriter(store, HashEmbedder(), clock)
    for content, partition in SEED:
        await writer.add(content, partition)
    return store, writer, clock


async def contents(retriever: Retriever, v: Viewer, query: str, limit: int = 10) -> list[str]:
    result = await retriever.search(v, query, limit=limit)
    return [f.fact.content for f in result.facts]


async def test_relevant_fact_ranks_first(
    world: tuple[MongoFactStore, FactWriter, ManualClock],
) -> None:
    store, _, clock = world
    r = make_retriever(store, HashEmbedder(), clock)
    found = await contents(r, BOB_GROUP, "what food does bob love?")
    assert found[0] == "Bob loves sushi and ramen"


async def test_dm_fact_never_reaches_group_or_other_dm(
    world: tuple[MongoFactStore, FactWriter, ManualClock],
) -> None:
    store, _, clock = world
    r = make_retriever(store, HashEmbedder(), clock)
    query = "surprise party for Bob on Friday"
    for v in (BOB_GROUP, ALICE_GROUP, BOB_DM, CAROL_DM, CAROL_WORK):
        assert "Alice is planning a surprise party for Bob on Friday" not in await contents(
            r, v, query, 50
        ), v
    assert (await contents(r, ALICE_DM, query))[0].startswith("Alice is planning a surprise")


async def test_each_viewer_sees_exactly_their_table_rows(
    world: tuple[MongoFactStore, FactWriter, ManualClock],
) -> None:
    store, _, clock = world
    r = make_retriever(store, HashEmbedder(), clock)
    # Every row is asked for by its own words (a bag of all words would be "unrelated" to
    # each row and fall under the relevance floor): a row shows up iff it is visible.
    queries = [content for content, *_ in SEED]
    expect = {
        BOB_GROUP: {1, 2, 3},
        ALICE_GROUP: {1, 2, 3},
        ALICE_DM: {0, 1, 3, 4},
        BOB_DM: {1, 2},
        CAROL_WORK: {4},
        CAROL_DM: {4, 5},
    }
    for v, rows in expect.items():
        got = {c for q in queries for c in await contents(r, v, q, 50)}
        assert got == {SEED[i][0] for i in rows}, v


async def test_cache_follows_writes_from_another_process(
    world: tuple[MongoFactStore, FactWriter, ManualClock],
) -> None:
    store, writer, clock = world
    reader = make_retriever(store, HashEmbedder(), clock)
    assert "Bob started learning the cello" not in await contents(reader, BOB_DM, "cello")
    fact, created = await writer.add(
        "Bob started learning the cello", Partition.member("fam", "bob")
    )
    assert created
    assert (await contents(reader, BOB_DM, "cello"))[0] == "Bob started learning the cello"
    # UPDATE: the new wording replaces the old in results; the old stays in history.
    await writer.reword(fact.id, "Bob plays the cello every Sunday", reason="more detail")
    found = await contents(reader, BOB_DM, "cello")
    assert found[0] == "Bob plays the cello every Sunday"
    assert "Bob started learning the cello" not in found
    stored = await store.get(fact.id)
    assert stored is not None and stored.history[0].content == "Bob started learning the cello"
    # A contradiction invalidates: out of retrieval, kept as history.
    await store.invalidate(fact.id, at=NOW, reason="contradicted")
    assert "Bob plays the cello every Sunday" not in await contents(reader, BOB_DM, "cello")
    assert (await store.get(fact.id)) is not None
    # Forget: gone from the database and from results.
    sushi = next(f for f in await store.list_visible(BOB_DM) if "sushi" in f.content)
    await store.delete([sushi.id])
    assert "Bob loves sushi and ramen" not in await contents(reader, BOB_DM, "sushi ramen")


async def test_duplicate_fact_is_stored_once(
    world: tuple[MongoFactStore, FactWriter, ManualClock],
) -> None:
    _, writer, _ = world
    first, created = await writer.add("Bob loves sushi and ramen.", Partition.member("fam", "bob"))
    assert not created
    again, created = await writer.add("Bob loves sushi and ramen", Partition.member("fam", "alice"))
    assert created, "the same words in another partition are another memory"
    assert first.id != again.id


async def test_recent_outranks_old_among_equals_but_old_never_vanishes(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    store = MongoFactStore(migrated_db)
    clock = ManualClock(NOW - timedelta(days=400))
    writer = FactWriter(store, HashEmbedder(), clock)
    await writer.add("Bob's favourite colour is green", Partition.member("fam", "bob"))
    clock.set(NOW)
    await writer.add("Bob's favourite colour is blue", Partition.member("fam", "bob"))
    r = make_retriever(store, HashEmbedder(), clock)
    found = await contents(r, BOB_DM, "Bob's favourite colour")
    assert found == ["Bob's favourite colour is blue", "Bob's favourite colour is green"]


async def test_access_is_tracked_without_blocking(
    world: tuple[MongoFactStore, FactWriter, ManualClock],
) -> None:
    store, _, clock = world
    r = make_retriever(store, HashEmbedder(), clock)
    result = await r.search(BOB_DM, "sushi ramen", limit=1)
    await r.drain()
    fact = await store.get(result.facts[0].fact.id)
    assert fact is not None and fact.access_count == 1 and fact.last_accessed_at == NOW


@pytest.mark.parametrize(
    "embedder", [FailingEmbedder(), WrongDimensionEmbedder(), SlowEmbedder(delay=2.0)]
)
async def test_broken_embedder_degrades_to_keywords(
    world: tuple[MongoFactStore, FactWriter, ManualClock], embedder: Embedder
) -> None:
    store, _, clock = world
    r = make_retriever(store, embedder, clock, embed_timeout_s=0.2)
    result = await r.search(BOB_DM, "sushi", limit=5)
    assert [f.fact.content for f in result.facts] == ["Bob loves sushi and ramen"]
    assert "dense" in result.legs and not result.legs["dense"].startswith("ok")


async def test_slow_leg_is_dropped_within_budget(
    world: tuple[MongoFactStore, FactWriter, ManualClock],
) -> None:
    store, _, clock = world

    async def stuck_leg(v: Viewer, text: str, k: int) -> dict[str, float]:
        await asyncio.sleep(10)
        return {}

    r = make_retriever(store, HashEmbedder(), clock, leg_timeout_s=0.2)
    r.extra_legs["mem0"] = stuck_leg
    started = asyncio.get_running_loop().time()
    result = await r.search(BOB_DM, "sushi", limit=5)
    assert asyncio.get_running_loop().time() - started < 1.0
    assert result.legs["mem0"] == "timeout"
    assert result.facts[0].fact.content == "Bob loves sushi and ramen"


class SlowFirstLoad(MongoFactStore):
    """The real store, whose first load of a scope takes longer than a leg's budget (an
    index's first load at 10,000 facts takes 1-2 s on the embedded server)."""

    async def partition_facts(
        self, viewer: Viewer, partition_keys: Sequence[str], *, batch: int
    ) -> AsyncIterator[LoadedFact]:
        await asyncio.sleep(0.6)
        async for fact in super().partition_facts(viewer, partition_keys, batch=batch):
            yield fact


class StarvedOnce(MongoJournal):
    """The real journal, whose first read of unformed messages never comes back in time
    (on the embedded server it waited behind an index's first load)."""

    starved = False

    async def unformed_visible(self, viewer: Viewer, *, limit: int) -> list[Message]:
        if not self.starved:
            self.starved = True
            await asyncio.sleep(10)
        return await super().unformed_visible(viewer, limit=limit)


async def said_minutes_ago(db: AsyncDatabase[dict[str, Any]]) -> StarvedOnce:
    journal = StarvedOnce(db)
    await journal.append(
        Message(
            id="m-keys",
            thread_id=group("fam").id,
            partition=Partition.circle("fam"),
            role=Role.USER,
            user_id="alice",
            text="I keep the boat keys in the red tin",
            created_at=NOW - timedelta(minutes=3),
        )
    )
    return journal


async def test_recent_messages_are_read_again_after_a_slow_first_load(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    """The reply waited for the index's first load longer than the recent leg's budget,
    so a journal read that timed out meanwhile is made again: what was said minutes ago
    is still found in the first reply after a start."""
    store = SlowFirstLoad(migrated_db)
    await FactWriter(store, HashEmbedder(), ManualClock(NOW)).add(*SEED[1])
    journal = await said_minutes_ago(migrated_db)
    retriever = make_retriever(store, HashEmbedder(), ManualClock(NOW), leg_timeout_s=0.2)
    retriever.recent = RecentLeg(journal, HashEmbedder())
    result = await retriever.search(BOB_GROUP, "where are the boat keys?", limit=5)
    assert journal.starved and result.legs["recent"] == "ok (1)"
    assert result.facts[0].fact.content == "I keep the boat keys in the red tin"


async def test_a_late_journal_read_is_still_dropped_within_budget(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    """With the index loaded, a journal read that is late is dropped at the leg's budget,
    and the facts answer."""
    store = MongoFactStore(migrated_db)
    await FactWriter(store, HashEmbedder(), ManualClock(NOW)).add(*SEED[1])
    journal = await said_minutes_ago(migrated_db)
    retriever = make_retriever(store, HashEmbedder(), ManualClock(NOW), leg_timeout_s=0.2)
    await retriever.search(BOB_GROUP, "warm the index", limit=5)
    retriever.recent = RecentLeg(journal, HashEmbedder())
    started = asyncio.get_running_loop().time()
    result = await retriever.search(BOB_GROUP, "when is the family in Lisbon?", limit=5)
    assert asyncio.get_running_loop().time() - started < 1.0
    assert result.legs["recent"] == "timeout"
    assert [f.fact.content for f in result.facts] == ["The family is going to Lisbon in May"]


@pytest.mark.parametrize(
    "query",
    ["", "   ", "🎉🎉🎉", "寿司が好きです", "Суши и рамен", "sushi " * 4000, "\x00\x01"],
)
async def test_odd_queries_answer_without_error(
    world: tuple[MongoFactStore, FactWriter, ManualClock], query: str
) -> None:
    store, _, clock = world
    r = make_retriever(store, HashEmbedder(), clock)
    result = await r.search(BOB_DM, query, limit=5)
    assert all(f.fact.partition.owner_user_id in (None, "bob") for f in result.facts)
    if query.startswith("sushi"):
        assert result.facts[0].fact.content == "Bob loves sushi and ramen"


async def test_circle_with_no_facts(migrated_db: AsyncDatabase[dict[str, Any]]) -> None:
    store = MongoFactStore(migrated_db)
    r = make_retriever(store, HashEmbedder(), ManualClock(NOW))
    result = await r.search(viewer("zed", group("empty"), ["empty"]), "anything at all?", limit=5)
    assert result.retrieved and result.facts == []


async def test_heuristic_skips_greetings(
    world: tuple[MongoFactStore, FactWriter, ManualClock],
) -> None:
    store, _, clock = world
    r = make_retriever(store, HashEmbedder(), clock)
    assert not (await r.for_message(BOB_DM, "hi!")).retrieved
    found = await r.for_message(BOB_DM, "what do I love to eat?")
    assert found.retrieved


async def test_category_is_kept(migrated_db: AsyncDatabase[dict[str, Any]]) -> None:
    store = MongoFactStore(migrated_db)
    clock = ManualClock(NOW)
    writer = FactWriter(store, HashEmbedder(), clock)
    await writer.add(
        "Alice's mother is called Susan", Partition.dm("alice"), category=Category.RELATIONSHIP
    )
    r = make_retriever(store, HashEmbedder(), clock)
    result = await r.search(ALICE_DM, "Alice's mother", limit=3)
    assert result.facts[0].fact.category is Category.RELATIONSHIP


async def test_a_question_in_other_words_finds_the_memory_only_where_it_is_visible(
    world: tuple[MongoFactStore, FactWriter, ManualClock],
) -> None:
    """ "any dietary requirements?" shares no word with "Alice is allergic to peanuts"
    ("allergies" and "allergic" do not even stem alike): the keyword leg also searches
    the words of the same thing (memory.search.related), through the same scoped index,
    so the answer is found where it is visible and nowhere else."""
    store, writer, clock = world
    await writer.add("Carol is vegan", Partition.dm("carol"))
    r = make_retriever(store, HashEmbedder(), clock)
    for asked in ("any dietary requirements?", "any allergies?", "what can people eat?"):
        for v in (ALICE_GROUP, BOB_GROUP):
            found = await contents(r, v, asked)
            assert "Alice is allergic to peanuts" in found, (asked, v, found)
            assert "Carol is vegan" not in found, (asked, v, found)
        for v in (CAROL_WORK, BOB_DM, ALICE_DM):
            assert "Carol is vegan" not in await contents(r, v, asked, 50), (asked, v)
        assert "Carol is vegan" in await contents(r, CAROL_DM, asked), asked
    # A question on another topic is not widened to it.
    assert await contents(r, ALICE_GROUP, "any plans for the weather?") == []
