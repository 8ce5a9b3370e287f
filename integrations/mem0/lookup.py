"""Mapping mem0 hits back to local facts, through the privacy filter: a hit whose local
fact the viewer may not see is dropped, whatever mem0 returned."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pymongo.asynchronous.database import AsyncDatabase

from integrations.mem0.common import _RESOLVE_PROJECTION, Document
from integrations.mongo.facts import MongoFactStore
from memory.constants import FACTS
from memory.models import Partition, Viewer
from memory.privacy import and_visible, is_visible
from memory.semantic import (
    SemanticIndex,
    SemanticLeg,
    SemanticMetrics,
)

log = logging.getLogger(__name__)

# --- mapping hits back to local facts -------------------------------------------------


class MongoSemanticLookup:
    """The resolver and partition lister :class:`SemanticLeg` needs, over MongoDB.

    Both carry the viewer's privacy filter inside their queries.
    """

    def __init__(self, db: AsyncDatabase[Document], store: MongoFactStore | None = None) -> None:
        self._facts = db[FACTS]
        self._store = store or MongoFactStore(db)

    async def resolve(
        self, viewer: Viewer, mem0_ids: Sequence[str]
    ) -> dict[str, tuple[str, Partition]]:
        """``mem0_id -> (fact id, partition)`` for current facts the viewer may see."""
        if not mem0_ids:
            return {}
        query = and_visible(viewer, {"mem0_id": {"$in": list(mem0_ids)}, "current": True})
        out: dict[str, tuple[str, Partition]] = {}
        async for doc in self._facts.find(query, _RESOLVE_PROJECTION):
            try:
                partition = Partition.from_fields(doc)
            except (KeyError, ValueError):
                continue
            out[str(doc["mem0_id"])] = (str(doc["_id"]), partition)
        return out

    async def partitions(self, viewer: Viewer) -> list[Partition]:
        """The partitions holding facts the viewer may see."""
        return [
            stored.partition
            for stored in await self._store.visible_partitions(viewer)
            if is_visible(stored.partition, viewer)
        ]


def semantic_leg(
    index: SemanticIndex,
    db: AsyncDatabase[Document],
    metrics: SemanticMetrics | None = None,
    *,
    timeout_s: float | None = None,
) -> SemanticLeg:
    """The mem0 leg for :class:`memory.retrieval.Retriever`'s ``extra_legs``."""
    lookup = MongoSemanticLookup(db)
    return SemanticLeg(index, lookup.resolve, lookup.partitions, metrics, timeout_s=timeout_s)
