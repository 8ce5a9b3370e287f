"""Reads under the privacy filter that the embedded server serves from an index.

The server plans an index only from a filter that is a plain prefix of one (equalities,
then at most one operator); the privacy filter of a DM viewer in a circle is an ``$or``,
and joined to a read's own conditions under ``$and`` it made the server scan the whole
collection: every note, summary, list, fact or message of every household, each time.
A read here runs once per arm of :func:`memory.privacy.visibility_arms` (one arm for a
group, two for a DM of someone in a circle, sent together), each opening with its arm,
which a partition index of the collection serves, and applying the exact filter and the
read's own conditions after it. The arms are disjoint (one holds DM partitions only,
the other shared ones), so their results add up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from memory.models import Viewer
from memory.privacy import and_visible, visibility_arms

Document = dict[str, Any]
#: A sort as pairs of field and direction (1 ascending, -1 descending).
SortSpec = Sequence[tuple[str, int]]


def _arm_pipelines(
    viewer: Viewer, query: Mapping[str, Any] | None, tail: list[Document]
) -> list[list[Document]]:
    exact: Document = {"$match": and_visible(viewer, query)}
    return [[{"$match": arm}, exact, *tail] for arm in visibility_arms(viewer)]


async def _run(coll: AsyncCollection[Document], pipeline: list[Document]) -> list[Document]:
    return [d async for d in await coll.aggregate(pipeline)]


async def visible_documents(
    coll: AsyncCollection[Document],
    viewer: Viewer,
    query: Mapping[str, Any] | None = None,
    *,
    sort: SortSpec = (),
    limit: int = 0,
    projection: Mapping[str, Any] | None = None,
) -> list[Document]:
    """What ``viewer`` may see of ``query`` in ``coll`` (whose indexes must include one
    that begins with the partition fields), in ``sort`` order (ties by ``_id``), the
    first ``limit`` of them when ``limit`` is set."""
    tail: list[Document] = []
    if sort:
        tail.append({"$sort": {**dict(sort), "_id": 1}})
    if limit:
        tail.append({"$limit": limit})
    if projection:
        tail.append({"$project": dict(projection)})
    found = await asyncio.gather(*(_run(coll, p) for p in _arm_pipelines(viewer, query, tail)))
    docs = [d for part in found for d in part]
    if len(found) > 1:
        docs = list({str(d["_id"]): d for d in docs}.values())
        docs.sort(key=lambda d: str(d["_id"]))
        for field, direction in reversed(list(sort)):
            docs.sort(key=_by(field), reverse=direction < 0)
        if limit:
            docs = docs[:limit]
    return docs


async def count_visible(
    coll: AsyncCollection[Document], viewer: Viewer, query: Mapping[str, Any] | None = None
) -> int:
    """How many documents of ``query`` in ``coll`` ``viewer`` may see."""
    pipelines = _arm_pipelines(viewer, query, [{"$count": "n"}])
    found = await asyncio.gather(*(_run(coll, p) for p in pipelines))
    return sum(int(part[0]["n"]) for part in found if part)


def _by(field: str) -> Callable[[Document], tuple[int, Any]]:
    return lambda doc: _sortable(doc.get(field))


def _sortable(value: Any) -> tuple[int, Any]:
    """A key that orders missing values first, as MongoDB does, and compares the rest."""
    if value is None:
        return (0, 0)
    if isinstance(value, datetime):
        return (2, value.timestamp())
    if isinstance(value, int | float):
        return (1, value)
    return (3, str(value))
