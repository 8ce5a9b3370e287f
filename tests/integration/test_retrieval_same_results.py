"""Speed work must not change what retrieval finds: the same top-k, scores and all.

The application backend hands retrieval each memory's keyword terms from its BM25 index
instead of letting it tokenize the text again. This compares, on a fixed data set of
household facts in several partitions, every result of the normal retriever with one
whose backend withholds the terms (the path every other backend takes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from bot.bench.synthetic import facts as synthetic_facts
from bot.bench.synthetic import questions as synthetic_questions
from integrations.mongo.facts import MongoFactStore
from memory.clock import ManualClock
from memory.facts import FactWriter
from memory.models import Partition, Viewer
from memory.ports import Vector
from memory.retrieval import Retriever
from memory.search.app_backend import AppSearch, AppSearchBackend
from memory.search.candidate import Candidate
from memory.search.scope_index import ScopeIndexCache
from tests.helpers.fakes import HashEmbedder
from tests.helpers.world import dm, group, viewer

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MEMBERS = ["alice", "bob", "carol"]


class WithoutTerms:
    """An :class:`AppSearch` whose candidates carry no terms (retrieval tokenizes)."""

    def __init__(self, inner: AppSearch) -> None:
        self._inner = inner

    async def dense(self, vector: Vector, k: int) -> dict[str, float]:
        return await self._inner.dense(vector, k)

    async def keyword(self, text: str, k: int) -> dict[str, float]:
        return await self._inner.keyword(text, k)

    async def resolve(self, ids: Sequence[str]) -> dict[str, Candidate]:
        found = await self._inner.resolve(ids)
        return {i: dataclasses.replace(c, terms=None) for i, c in found.items()}


class WithoutTermsBackend(AppSearchBackend):
    async def prepare(self, viewer: Viewer) -> WithoutTerms:  # type: ignore[override]
        return WithoutTerms(await super().prepare(viewer))


def _partition(i: int) -> Partition:
    if i % 3 == 0:
        return Partition.circle("fam")
    if i % 7 == 0:
        return Partition.dm(MEMBERS[i % 3])
    return Partition.member("fam", MEMBERS[i % 3])


async def test_terms_from_the_index_give_the_same_results(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    store = MongoFactStore(migrated_db)
    clock = ManualClock(NOW)
    embedder = HashEmbedder()
    writer = FactWriter(store, embedder, clock)
    for i, text in enumerate(synthetic_facts(240, seed=5)):
        await writer.add(text, _partition(i))

    def retriever(backend_type: type[AppSearchBackend]) -> Retriever:
        cache = ScopeIndexCache(
            store, dimensions=embedder.dimensions, model_name=embedder.model_name
        )
        return Retriever(backend_type(cache), embedder, clock)

    fast, slow = retriever(AppSearchBackend), retriever(WithoutTermsBackend)
    viewers = [viewer("alice", group("fam"), ["fam"]), viewer("bob", dm("bob"), ["fam"])]
    compared = 0
    for n, query in enumerate(synthetic_questions(40, seed=3)):
        about = {"carol": "Carol"} if n % 4 == 0 else None
        for v in viewers:
            got = await fast.search(v, query, limit=10, about=about)
            want = await slow.search(v, query, limit=10, about=about)
            assert [(f.fact.id, f.score, f.relevance) for f in got.facts] == [
                (f.fact.id, f.score, f.relevance) for f in want.facts
            ], query
            compared += len(got.facts)
    assert compared > 200  # the queries found things: the comparison is not vacuous
