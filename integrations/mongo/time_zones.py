"""Time zones on the users and circles documents (:class:`memory.timezones.ZoneStore`).

A person's zone and whether Alfred has told them which zone it guessed live on their user
document (``time_zone``, ``time_zone_told``), so "forget everything about me", which
deletes that document, takes them too. A circle's zone lives on its circle document
(``time_zone``) and moves with it when the group becomes a supergroup. Reads by ``_id``
only: no index is needed.
"""

from __future__ import annotations

from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo import turn_memo
from integrations.mongo.turn_memo import MISSING
from memory.constants import CIRCLES, USERS

Document = dict[str, Any]


class MongoTimeZones:
    """The time zone fields of users and circles."""

    def __init__(self, db: AsyncDatabase[Document]) -> None:
        self._users = db[USERS]
        self._circles = db[CIRCLES]

    async def user_zone(self, user_id: str) -> str | None:
        memo = turn_memo.current()  # a reply turn has read the person already
        held = memo.get(USERS, ("id", user_id)) if memo is not None else MISSING
        doc = (
            await self._users.find_one({"_id": user_id}, {"time_zone": 1})
            if held is MISSING
            else held
        )
        zone = doc.get("time_zone") if doc else None
        return zone if isinstance(zone, str) else None

    async def set_user_zone(self, user_id: str, zone: str | None) -> None:
        # Only an existing user: a zone never creates a user record of its own.
        await self._users.update_one({"_id": user_id}, {"$set": {"time_zone": zone}})

    async def circle_zones(self, circle_ids: list[str]) -> dict[str, str]:
        if not circle_ids:
            return {}
        memo = turn_memo.current()  # a reply turn has read the person's circles already
        if memo is not None:
            held = [memo.get(CIRCLES, ("id", cid)) for cid in circle_ids]
            if all(doc is not MISSING for doc in held):
                return {
                    str(doc["_id"]): doc["time_zone"]
                    for doc in held
                    if doc and isinstance(doc.get("time_zone"), str)
                }
        return {
            str(doc["_id"]): doc["time_zone"]
            async for doc in self._circles.find(
                {"_id": {"$in": circle_ids}, "time_zone": {"$type": "string"}},
                {"time_zone": 1},
            )
        }

    async def set_circle_zone(self, circle_id: str, zone: str | None) -> None:
        await self._circles.update_one({"_id": circle_id}, {"$set": {"time_zone": zone}})

    async def take_fallback_notice(self, user_id: str) -> bool:
        result = await self._users.update_one(
            {"_id": user_id, "time_zone_told": {"$ne": True}},
            {"$set": {"time_zone_told": True}},
        )
        return result.modified_count > 0
