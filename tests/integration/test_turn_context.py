"""A memory that is a turn of a conversation is embedded with the turn it answered
(memory.search.context): found by the question's topic, shown in its own words, and
re-embedded the same way after a model change."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.admin import MongoAdminQueries
from integrations.mongo.facts import MongoFactStore
from memory.clock import ManualClock
from memory.constants import FACTS
from memory.facts import FactWriter
from memory.models import Category, Partition, Provenance, Thread, ThreadKind, Viewer
from memory.retrieval import RetrievalConfig, Retriever
from memory.search.app_backend import AppSearchBackend
from memory.search.context import embedding_text
from memory.search.scope_index import ScopeIndexCache
from tests.helpers.fakes import HashEmbedder

NOW = datetime(2026, 5, 2, 18, 30, tzinfo=UTC)
REPLY = "Toffee, after the colour of his ears"
ASKED = "Rosa: what will you call the new kitten?"
OTHER = "We painted the hallway green on Sunday"


def rosa() -> Viewer:
    return Viewer(user_id="rosa", thread=Thread(id="dm-rosa", kind=ThreadKind.DM, user_id="rosa"))


@pytest.fixture
def store(migrated_db: AsyncDatabase[dict[str, Any]]) -> MongoFactStore:
    return MongoFactStore(migrated_db)


async def write_turns(writer: FactWriter, context: str | None) -> None:
    await writer.add_many(
        [
            (REPLY, Category.FACT, 5, Partition.dm("rosa"), Provenance(context=context)),
            (OTHER, Category.FACT, 5, Partition.dm("rosa"), Provenance()),
        ]
    )


async def found(store: MongoFactStore, embedder: HashEmbedder, query: str) -> list[str]:
    cache = ScopeIndexCache(store, dimensions=embedder.dimensions, model_name=embedder.model_name)
    retriever = Retriever(AppSearchBackend(cache), embedder, ManualClock(NOW), RetrievalConfig())
    result = await retriever.search(rosa(), query, limit=5)
    return [f.fact.content for f in result.facts]


async def test_a_reply_is_found_by_the_topic_of_what_it_answered(
    migrated_db: AsyncDatabase[dict[str, Any]], store: MongoFactStore
) -> None:
    embedder = HashEmbedder()
    await write_turns(FactWriter(store, embedder, ManualClock(NOW)), ASKED)
    # The reply shares no word with the question; the turn it answered does. It is shown
    # in its own words.
    assert await found(store, embedder, "what did they call the new kitten?") == [REPLY]
    # Only the vector carries the context: a word of it alone is no keyword match.
    assert await found(store, embedder, "kitten") == []
    stored = await migrated_db[FACTS].find_one({"content": REPLY})
    assert stored is not None and stored["provenance"]["context"] == ASKED


async def test_without_what_it_answered_the_reply_is_not_found(store: MongoFactStore) -> None:
    embedder = HashEmbedder()
    await write_turns(FactWriter(store, embedder, ManualClock(NOW)), None)
    assert await found(store, embedder, "what did they call the new kitten?") == []


async def test_re_embedding_embeds_a_turn_with_what_it_answered(
    migrated_db: AsyncDatabase[dict[str, Any]], store: MongoFactStore
) -> None:
    await write_turns(FactWriter(store, HashEmbedder(32, "old-model-32"), ManualClock(NOW)), ASKED)
    stale = await MongoAdminQueries(migrated_db).stale_embeddings("hash-bow-64", 64, limit=10)
    assert sorted(text for _, text in stale) == sorted([embedding_text(REPLY, ASKED), OTHER])


async def test_a_reworded_turn_is_embedded_alone_and_forgets_its_context(
    migrated_db: AsyncDatabase[dict[str, Any]], store: MongoFactStore
) -> None:
    embedder = HashEmbedder()
    writer = FactWriter(store, embedder, ManualClock(NOW))
    await write_turns(writer, ASKED)
    doc = await migrated_db[FACTS].find_one({"content": REPLY})
    assert doc is not None
    new = "Rosa's kitten is called Toffee"
    reworded = await writer.reword(str(doc["_id"]), new)
    assert reworded is not None and reworded.provenance.context is None
    expected = (await embedder.embed([new]))[0]
    assert np.allclose(np.asarray(reworded.embedding, dtype=np.float32), expected, atol=1e-6)
    # and a later re-embedding agrees with the writer: the new words alone
    stale = await MongoAdminQueries(migrated_db).stale_embeddings("other-model", 64, limit=10)
    assert new in {text for _, text in stale}
