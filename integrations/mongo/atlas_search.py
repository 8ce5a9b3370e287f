"""The Atlas search backend: ``$vectorSearch`` and ``$search`` with the privacy filter inside.

The viewer's visible partitions are read with the privacy filter in the query, checked
once more with :func:`memory.privacy.is_visible`, and passed to both search stages as a
pre-filter on ``pkey`` (a filter field of both indexes). Atlas therefore never scores a
fact the viewer may not see. Hits are resolved to facts through another filtered query.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.facts import MongoFactStore
from integrations.mongo.search_indexes import TEXT_INDEX, VECTOR_INDEX
from memory.constants import FACTS
from memory.models import Viewer
from memory.ports import Vector
from memory.privacy import is_visible
from memory.search.candidate import Candidate, candidate_of

Document = dict[str, Any]

#: ANN candidates per result: Atlas recommends 10-20x the limit for good recall.
CANDIDATES_PER_RESULT = 15
#: Atlas caps ``numCandidates`` at 10 000, and ``limit`` may not exceed ``numCandidates``.
MAX_CANDIDATES = 10_000


def prefilter(partition_keys: Sequence[str]) -> Document:
    """The ``$vectorSearch`` filter: current facts of the allowed partitions only.

    Equality is written in full (``$eq``): the ``$vectorSearch`` filter has not always
    accepted MQL's short form ``{field: value}``."""
    return {"$and": [{"pkey": {"$in": list(partition_keys)}}, {"current": {"$eq": True}}]}


def vector_pipeline(
    vector: Sequence[float], partition_keys: Sequence[str], k: int
) -> list[Document]:
    """``$vectorSearch`` over fact embeddings, pre-filtered, with the score projected."""
    return [
        {
            "$vectorSearch": {
                "index": VECTOR_INDEX,
                "path": "embedding",
                "queryVector": [float(x) for x in vector],
                "numCandidates": min(MAX_CANDIDATES, max(100, k * CANDIDATES_PER_RESULT)),
                "limit": min(k, MAX_CANDIDATES),
                "filter": prefilter(partition_keys),
            }
        },
        {"$project": {"_id": 1, "score": {"$meta": "vectorSearchScore"}}},
    ]


def text_pipeline(text: str, partition_keys: Sequence[str], k: int) -> list[Document]:
    """``$search`` on fact content, the same partitions as a non-scoring filter clause."""
    return [
        {
            "$search": {
                "index": TEXT_INDEX,
                "compound": {
                    "must": [{"text": {"query": text, "path": "content"}}],
                    "filter": [
                        {"in": {"path": "pkey", "value": list(partition_keys)}},
                        {"equals": {"path": "current", "value": True}},
                    ],
                },
            }
        },
        {"$limit": k},
        {"$project": {"_id": 1, "score": {"$meta": "searchScore"}}},
    ]


class AtlasSearch:
    """One query on Atlas for one viewer."""

    def __init__(
        self, db: AsyncDatabase[Document], store: MongoFactStore, viewer: Viewer, keys: list[str]
    ) -> None:
        self._facts = db[FACTS]
        self._store = store
        self._viewer = viewer
        self._keys = keys

    async def _run(self, pipeline: list[Document]) -> dict[str, float]:
        if not self._keys:
            return {}
        cursor = await self._facts.aggregate(pipeline)
        return {str(d["_id"]): float(d.get("score", 0.0)) async for d in cursor}

    async def dense(self, vector: Vector, k: int) -> dict[str, float]:
        return await self._run(vector_pipeline(vector.tolist(), self._keys, k))

    async def keyword(self, text: str, k: int) -> dict[str, float]:
        return await self._run(text_pipeline(text, self._keys, k))

    async def resolve(self, ids: Sequence[str]) -> dict[str, Candidate]:
        facts = await self._store.load_facts(self._viewer, ids, with_embeddings=False)
        return {f.id: candidate_of(f) for f in facts}


class AtlasSearchBackend:
    """Search on Atlas; chosen at start-up when the server has Atlas Search and the
    indexes exist."""

    name = "atlas"

    def __init__(self, db: AsyncDatabase[Document], store: MongoFactStore) -> None:
        self._db = db
        self._store = store

    async def prepare(self, viewer: Viewer) -> AtlasSearch:
        partitions = await self._store.visible_partitions(viewer)
        keys = sorted(pv.partition.key() for pv in partitions if is_visible(pv.partition, viewer))
        return AtlasSearch(self._db, self._store, viewer, keys)


async def missing_search_indexes(db: AsyncDatabase[Document]) -> list[str]:
    """Names of Alfred's search indexes that are absent or not queryable yet."""
    cursor = await db[FACTS].list_search_indexes()
    present = {d["name"]: d async for d in cursor}
    missing = []
    for name in (VECTOR_INDEX, TEXT_INDEX):
        doc = present.get(name)
        if doc is None or not doc.get("queryable", doc.get("status") == "READY"):
            missing.append(name)
    return missing
