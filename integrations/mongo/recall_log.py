"""Recall counts, logged cheaply by the bot and added to the facts later by a worker.

A recall is counted on the fact itself (``access_count``, ``last_accessed_at``: the
ranking's strength and the "used lately" of recency). Updating a fact rewrites the whole
document and every one of its index entries, and on the embedded server that costs
about 2 ms a fact: a batch of a few hundred recalls held the server for most of a second
while replies waited behind it. So the bot only appends one small document per batch
(:meth:`MongoRecallLog.append`, a single insert), and the worker's every-minute duty
(:meth:`MongoRecallLog.fold`) adds the counts of every waiting batch to the facts, once
per fact however often it was recalled, then deletes the batches.

One fold runs at a time (the duty holds a lock for it: ``services.formation_duties``), and
it survives being cut off: it first marks the batches it takes with a token, then updates
each fact only if that token is not on it yet (and puts it there), and deletes the batches
last. The next fold first finishes batches a killed worker left marked, with their token,
so no count is lost and none is added twice. A batch holds fact ids and numbers only; a
count for a fact deleted meanwhile adds to nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final

from pymongo import UpdateOne
from pymongo.asynchronous.database import AsyncDatabase

from memory.constants import FACTS, RECALLS
from memory.ids import new_id

#: Batches one fold step takes (the rest wait for the next step of the same fold).
FOLD_BATCHES: Final = 50
#: Fact updates sent in one ``bulkWrite``: short enough that replies do not queue behind it.
FOLD_CHUNK: Final = 64
#: The field on a fact that says which fold last added to it.
FOLD_MARK: Final = "recall_fold"


class MongoRecallLog:
    """The batches of recall counts waiting for the worker, in their own collection."""

    def __init__(self, db: AsyncDatabase[dict[str, Any]]) -> None:
        self._log = db[RECALLS]
        self._facts = db[FACTS]

    async def append(self, counts: Mapping[str, tuple[int, datetime]]) -> None:
        """Log one batch: per fact, how many recalls and the latest one's time."""
        if counts:
            entries = [[fact_id, n, at] for fact_id, (n, at) in counts.items()]
            await self._log.insert_one({"_id": new_id(), "counts": entries})

    async def fold(self, *, go_on: Callable[[], bool] = lambda: True) -> int:
        """Add every waiting batch to its facts; return how many fact updates were sent.

        ``go_on`` is asked before every write: once it says no (the fold's lock was lost),
        the fold stops and leaves the rest, marked or not, to the next one."""
        sent = 0
        while go_on():
            token = await self._left_over() or await self._claim()
            if token is None:
                break
            applied = await self._apply(token, go_on)
            if applied is None:
                break
            sent += applied
            await self._log.delete_many({"fold": token})
        return sent

    async def waiting(self) -> int:
        """Batches not folded yet."""
        return await self._log.count_documents({})

    async def _left_over(self) -> str | None:
        """The token of batches a fold marked and did not finish (its worker died)."""
        doc = await self._log.find_one({"fold": {"$exists": True}}, {"fold": 1})
        return str(doc["fold"]) if doc else None

    async def _claim(self) -> str | None:
        ids = [
            d["_id"]
            async for d in self._log.find({"fold": {"$exists": False}}, {"_id": 1}).limit(
                FOLD_BATCHES
            )
        ]
        if not ids:
            return None
        token = new_id()
        marked = await self._log.update_many(
            {"_id": {"$in": ids}, "fold": {"$exists": False}}, {"$set": {"fold": token}}
        )
        # Another fold took them first: claim from what is left.
        return token if marked.modified_count else await self._claim()

    async def _apply(self, token: str, go_on: Callable[[], bool]) -> int | None:
        totals: dict[str, tuple[int, datetime]] = {}
        async for doc in self._log.find({"fold": token}):
            for fact_id, n, at in doc.get("counts", []):
                held_n, held_at = totals.get(fact_id, (0, at))
                totals[fact_id] = (held_n + int(n), max(held_at, at))
        updates = [
            UpdateOne(
                {"_id": fact_id, FOLD_MARK: {"$ne": token}},
                {
                    "$inc": {"access_count": n},
                    "$max": {"last_accessed_at": at},
                    "$set": {FOLD_MARK: token},
                },
            )
            for fact_id, (n, at) in totals.items()
        ]
        for start in range(0, len(updates), FOLD_CHUNK):
            if not go_on():
                return None
            await self._facts.bulk_write(updates[start : start + FOLD_CHUNK], ordered=False)
        return len(updates)
