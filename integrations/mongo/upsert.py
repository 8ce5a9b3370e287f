"""Upserts that are safe when two writers create the same document at the same moment.

MongoDB runs an upsert as "find, else insert". Two replicas that see a new user's first
message at once both find nothing and both insert: one wins, the other gets a
``DuplicateKeyError`` (on ``_id`` or another unique key), and a ``find_one_and_update``
may even come back with ``None``. Neither means anything went wrong: the document now
exists, so running the same update again matches it and applies normally. Every
``upsert=True`` in the adapters goes through here instead of trusting one attempt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from pymongo import ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError
from pymongo.results import UpdateResult

from memory.errors import AlfredError

Document = dict[str, Any]

#: A losing writer needs one more attempt; more only if the winner's document vanished
#: again in between (deleted by an erase, say) or another unique key keeps clashing.
UPSERT_ATTEMPTS = 5
_BACKOFF = 0.005  # seconds, doubled per attempt: lets the winner's write settle


class UpsertConflict(AlfredError):
    """An upsert kept clashing with a unique key: not a race, a real conflict."""


def _conflict(collection: AsyncCollection[Document], query: Mapping[str, Any]) -> UpsertConflict:
    return UpsertConflict(
        f"MongoDB: could not create or update the {collection.name} record {dict(query)!r} "
        f"after {UPSERT_ATTEMPTS} attempts (a unique key keeps clashing)",
        hint="another record holds one of its unique keys; see the database's indexes",
    )


async def upsert_returning(
    collection: AsyncCollection[Document],
    query: Mapping[str, Any],
    update: Mapping[str, Any],
) -> Document:
    """``find_one_and_update(upsert=True)``, returning the document after the update.

    Retries when a concurrent writer inserted the same key first, or when the driver
    answers ``None``; raises :class:`UpsertConflict` if it never settles.
    """
    for attempt in range(UPSERT_ATTEMPTS):
        try:
            doc = await collection.find_one_and_update(
                dict(query), dict(update), upsert=True, return_document=ReturnDocument.AFTER
            )
        except DuplicateKeyError:
            doc = None
        if doc is not None:
            return doc
        await asyncio.sleep(_BACKOFF * 2**attempt)
    raise _conflict(collection, query)


async def upsert(
    collection: AsyncCollection[Document],
    query: Mapping[str, Any],
    update: Mapping[str, Any],
) -> UpdateResult:
    """``update_one(upsert=True)``, retried when a concurrent writer inserted first.

    A failed upsert applied nothing, so running it again applies the update exactly once
    (an ``$inc`` included). Raises :class:`UpsertConflict` if it never settles.
    """
    for attempt in range(UPSERT_ATTEMPTS):
        try:
            return await collection.update_one(dict(query), dict(update), upsert=True)
        except DuplicateKeyError:
            await asyncio.sleep(_BACKOFF * 2**attempt)
    raise _conflict(collection, query)
