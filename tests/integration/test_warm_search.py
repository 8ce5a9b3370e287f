"""A query embedding started ahead (``Retriever.warm``) serves the search that follows
it, changes nothing about what is found, and never leaves work or errors behind."""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

import pytest

from integrations.mongo.facts import MongoFactStore
from memory.clock import ManualClock
from memory.facts import FactWriter
from memory.retrieval import WARM_KEPT
from tests.helpers.fakes import FailingEmbedder, HashEmbedder
from tests.integration.test_retrieval import BOB_DM, BOB_GROUP, make_retriever
from tests.integration.test_retrieval import world as world

QUESTION = "where is the family going in May?"


async def test_a_warmed_search_embeds_once_and_finds_the_same(
    world: tuple[MongoFactStore, FactWriter, ManualClock],
) -> None:
    store, _, clock = world
    cold_embedder, warm_embedder = HashEmbedder(), HashEmbedder()
    cold = await make_retriever(store, cold_embedder, clock).for_message(BOB_GROUP, QUESTION)
    warm = make_retriever(store, warm_embedder, clock)
    warm.warm(QUESTION)
    await asyncio.sleep(0)  # the embedding runs while the turn does other things
    assert warm_embedder.calls == 1
    found = await warm.for_message(BOB_GROUP, QUESTION)
    assert warm_embedder.calls == 1, "the search embedded the query again"
    assert [f.fact.id for f in found.facts] == [f.fact.id for f in cold.facts]
    assert "The family is going to Lisbon in May" in [f.fact.content for f in found.facts]
    # Consumed: the next search of the same words embeds afresh.
    await warm.for_message(BOB_DM, QUESTION)
    assert warm_embedder.calls == 2


async def test_what_would_not_be_searched_is_not_embedded(
    world: tuple[MongoFactStore, FactWriter, ManualClock],
) -> None:
    store, _, clock = world
    embedder = HashEmbedder()
    r = make_retriever(store, embedder, clock)
    for message in ("thanks!", "", "   "):
        r.warm(message)
    await asyncio.sleep(0)
    assert embedder.calls == 0


async def test_unused_warm_embeddings_are_bounded(
    world: tuple[MongoFactStore, FactWriter, ManualClock],
) -> None:
    store, _, clock = world
    embedder = HashEmbedder()
    r = make_retriever(store, embedder, clock)
    for n in range(WARM_KEPT * 3):
        r.warm(f"what did we plan for trip number {n}?")
    assert len(r._warming) == WARM_KEPT
    await asyncio.sleep(0.01)
    # The newest are still there to serve their search.
    await r.for_message(BOB_DM, f"what did we plan for trip number {WARM_KEPT * 3 - 1}?")
    assert len(r._warming) == WARM_KEPT - 1


async def test_a_failed_warm_embedding_degrades_like_a_cold_one(
    world: tuple[MongoFactStore, FactWriter, ManualClock], caplog: pytest.LogCaptureFixture
) -> None:
    store, _, clock = world
    r = make_retriever(store, FailingEmbedder(), clock)
    r.warm("does bob like sushi?")
    r.warm("what about ramen tonight?")  # never searched: its failure must stay quiet
    await asyncio.sleep(0.01)
    loop: Any = asyncio.get_running_loop()
    unretrieved: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: unretrieved.append(context))
    try:
        with caplog.at_level(logging.WARNING):
            result = await r.for_message(BOB_DM, "does bob like sushi?")
        assert [f.fact.content for f in result.facts] == ["Bob loves sushi and ramen"]
        assert result.legs["embed"].startswith("failed")
        r._warming.clear()
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    assert unretrieved == []
