"""Pending deliveries: what Alfred must send to a person's DM once they open a chat with it.

One document per waiting delivery::

    {_id: token, user_id, kind, created_at, expires_at}

The token is the start link's parameter (``t.me/<bot>?start=<token>``): random, URL-safe,
and carrying nothing about the person or their memories; the document holds no memory text
either (the export is made again when delivered). A TTL index on ``expires_at`` removes
expired entries; a claim also checks the date, since the TTL monitor runs only once a
minute. The index is made here, on first use, rather than by a migration: the collection
is a small queue of a few entries that nothing else reads.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any, Final

from pymongo import ASCENDING, IndexModel
from pymongo.asynchronous.database import AsyncDatabase

#: The collection (named here: the domain never reads it).
PENDING_DELIVERIES: Final = "pending_deliveries"
_INDEXES: Final = [
    IndexModel([("expires_at", ASCENDING)], expireAfterSeconds=0, name="expire"),
    IndexModel([("user_id", ASCENDING), ("kind", ASCENDING)], name="user_kind"),
]


class MongoPendingDeliveries:
    """The :class:`memory.reply_ports.PendingDeliveries` port on MongoDB."""

    def __init__(self, db: AsyncDatabase[dict[str, Any]]) -> None:
        self._c = db[PENDING_DELIVERIES]
        self._indexed = False

    async def _index(self) -> None:
        if not self._indexed:
            await self._c.create_indexes(_INDEXES)
            self._indexed = True

    async def hold(self, user_id: str, kind: str, *, at: datetime, until: datetime) -> str:
        await self._index()
        waiting = await self._c.find_one_and_update(
            {"user_id": user_id, "kind": kind, "expires_at": {"$gt": at}},
            {"$set": {"expires_at": until}},
        )
        if waiting is not None:  # asked again: the same link, kept longer
            return str(waiting["_id"])
        token = secrets.token_urlsafe(16)  # 22 characters of [A-Za-z0-9_-]
        await self._c.insert_one(
            {"_id": token, "user_id": user_id, "kind": kind, "created_at": at, "expires_at": until}
        )
        return token

    async def claim(self, user_id: str, token: str | None, *, now: datetime) -> list[str]:
        kinds: list[str] = []
        while True:  # each entry is removed by exactly one claim, so it is delivered once
            doc = await self._c.find_one_and_delete(
                {"user_id": user_id, "expires_at": {"$gt": now}}, sort=[("created_at", 1)]
            )
            if doc is None:
                break
            if doc["kind"] not in kinds:
                kinds.append(str(doc["kind"]))
        return kinds

    async def forget_user(self, user_id: str) -> int:
        """Drop a person's waiting deliveries (they were erased)."""
        result = await self._c.delete_many({"user_id": user_id})
        return int(result.deleted_count)
