"""The application-side search backend: scoring over the viewer's cached scope index.

Used where the database has no search engine (the embedded server, self-hosted
MongoDB). The candidates are exactly the facts the privacy filter let into the scope
index; the dense leg is one matrix-vector product, the keyword leg BM25.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from memory.models import Viewer
from memory.ports import Vector
from memory.search.candidate import Candidate
from memory.search.scope_index import ScopeIndex, ScopeIndexCache

#: Above this many facts, scoring moves off the event loop (it takes milliseconds).
OFFLOAD_ABOVE = 20_000


class AppSearch:
    """One query against one synced scope index."""

    def __init__(self, index: ScopeIndex) -> None:
        self._index = index

    @property
    def stamp(self) -> tuple[int, int]:
        """The index searched and its count of changes: equal stamps, equal rankings."""
        return (id(self._index), self._index.changes)

    async def dense(self, vector: Vector, k: int) -> dict[str, float]:
        if len(self._index.vectors) > OFFLOAD_ABOVE:
            return await asyncio.to_thread(self._dense, vector, k)
        return self._dense(vector, k)

    def _dense(self, vector: Vector, k: int) -> dict[str, float]:
        return dict(self._index.vectors.top_k(vector, k))

    async def keyword(self, text: str, k: int) -> dict[str, float]:
        if len(self._index.facts) > OFFLOAD_ABOVE:
            return dict(await asyncio.to_thread(self._index.bm25.top_k, text, k))
        return dict(self._index.bm25.top_k(text, k))

    async def resolve(self, ids: Sequence[str]) -> dict[str, Candidate]:
        facts = self._index.facts
        return {fact_id: held.candidate for fact_id in ids if (held := facts.get(fact_id))}


class AppSearchBackend:
    """Prepares an :class:`AppSearch` by syncing the viewer's scope index first."""

    name = "application"

    def __init__(self, cache: ScopeIndexCache) -> None:
        self.cache = cache

    async def prepare(self, viewer: Viewer) -> AppSearch:
        return AppSearch(await self.cache.index_for(viewer))

    def peek(self, viewer: Viewer) -> AppSearch | None:
        """A search of the index ``viewer``'s last search used, unconfirmed (for a
        ranking made ahead, which its search then confirms or drops)."""
        index = self.cache.peek(viewer)
        return AppSearch(index) if index is not None else None
