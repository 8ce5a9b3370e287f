"""Shared lists in MongoDB: the ``lists`` collection, as :class:`memory.lists.ListStore`.

One document per list: its key and title, the flat partition fields every artefact
carries (``circle_id``, ``owner_user_id``, ``visibility``), the thread it lives in, and
its items as an array (who added each). Reads always go through
:func:`memory.privacy.visibility_filter`; changes are single atomic updates of one
document (``$push``, ``$pull``), so two people adding at once both land.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.upsert import upsert_returning
from integrations.mongo.visible_reads import visible_documents
from memory.lists import MAX_ITEMS, REMOVALS_KEPT, ListItem, SharedList, item_id_for
from memory.models import Partition, Viewer, Visibility
from memory.privacy import visibility_filter

Document = dict[str, Any]

LISTS = "lists"


def _used(at: datetime) -> dict[str, Any]:
    """Mark a list used at ``at``. ``used_seq`` (the wall clock in nanoseconds) orders
    two uses within the same instant of Alfred's clock (a replay's clock stands still
    between lines), so "the list last used" is always the one touched last."""
    return {"used_at": at, "used_seq": time.time_ns()}


def _item(list_id: str, raw: Document) -> ListItem:
    """An item as stored; one kept before items had ids gets its derived id."""
    item = ListItem.model_validate(raw)
    if not item.id:
        item.id = item_id_for(list_id, item.key)
    return item


def _shared_list(doc: Document) -> SharedList:
    return SharedList(
        id=str(doc["_id"]),
        key=doc["key"],
        title=doc.get("title") or doc["key"],
        partition=Partition.from_fields(doc),
        thread_id=doc["thread_id"],
        created_by=doc.get("created_by"),
        items=[_item(str(doc["_id"]), i) for i in doc.get("items", [])],
        created_at=doc["created_at"],
        used_at=doc.get("used_at") or doc["created_at"],
        removed_by=list(doc.get("removed_by") or []),
    )


class MongoListStore:
    """The ``lists`` collection."""

    def __init__(self, db: AsyncDatabase[Document]) -> None:
        self._lists = db[LISTS]

    async def visible(self, viewer: Viewer) -> list[SharedList]:
        recent_first = [("used_at", -1), ("used_seq", -1)]
        return [
            _shared_list(d) for d in await visible_documents(self._lists, viewer, sort=recent_first)
        ]

    async def create(self, shared: SharedList) -> SharedList:
        query = {**shared.partition.as_fields(), "key": shared.key}
        doc = await upsert_returning(
            self._lists,
            query,
            {
                "$setOnInsert": {
                    "_id": shared.id,
                    "title": shared.title,
                    "thread_id": shared.thread_id,
                    "created_by": shared.created_by,
                    "items": [],
                    "created_at": shared.created_at,
                    **_used(shared.used_at),
                }
            },
        )
        return _shared_list(doc)

    async def add_items(self, list_id: str, items: Sequence[ListItem], at: datetime) -> None:
        await self._lists.update_one(
            {"_id": list_id},
            {
                "$push": {
                    "items": {
                        "$each": [i.model_dump() for i in items],
                        "$slice": -MAX_ITEMS,
                    }
                },
                "$set": _used(at),
            },
        )

    async def remove_items(
        self, list_id: str, keys: Sequence[str], at: datetime, *, source: str | None = None
    ) -> None:
        change: Document = {"$pull": {"items": {"key": {"$in": list(keys)}}}, "$set": _used(at)}
        if source is not None:
            change["$push"] = {"removed_by": {"$each": [source], "$slice": -REMOVALS_KEPT}}
        await self._lists.update_one({"_id": list_id}, change)

    async def clear(self, list_id: str, at: datetime) -> None:
        await self._lists.update_one({"_id": list_id}, {"$set": {"items": [], **_used(at)}})

    async def touch(self, list_id: str, at: datetime) -> None:
        await self._lists.update_one({"_id": list_id}, {"$set": _used(at)})

    async def get(self, list_id: str, viewer: Viewer) -> SharedList | None:
        # By id first, then the filter: in one ``$and`` the embedded server scanned every list.
        pipeline = [{"$match": {"_id": list_id}}, {"$match": visibility_filter(viewer)}]
        docs = [d async for d in await self._lists.aggregate(pipeline)]
        doc = docs[0] if docs else None
        return _shared_list(doc) if doc is not None else None

    async def tick(self, list_id: str, item_id: str, at: datetime) -> ListItem | None:
        doc = await self._lists.find_one({"_id": list_id})
        items = (_item(list_id, raw) for raw in (doc or {}).get("items", []))
        item = next((i for i in items if i.id == item_id), None)
        if item is None:
            return None
        # Keys are unique within a list, so the key names the item for the update even
        # when it was stored without an id; a second press of the same button changes
        # nothing and says so (modified_count 0).
        done = await self._lists.update_one(
            {"_id": list_id, "items.key": item.key},
            {"$pull": {"items": {"key": item.key}}, "$set": _used(at)},
        )
        return item if done.modified_count else None

    async def forget_circle(self, circle_id: str) -> int:
        gone = await self._lists.delete_many(
            {"visibility": Visibility.SHARED.value, "circle_id": circle_id}
        )
        return gone.deleted_count

    async def forget_user(self, user_id: str) -> dict[str, int]:
        own = await self._lists.delete_many(
            {"visibility": Visibility.DM.value, "owner_user_id": user_id}
        )
        shared = {"visibility": Visibility.SHARED.value}
        theirs = 0
        async for doc in self._lists.find({**shared, "items.added_by": user_id}):
            theirs += sum(1 for i in doc.get("items", []) if i.get("added_by") == user_id)
        await self._lists.update_many(
            {**shared, "items.added_by": user_id}, {"$pull": {"items": {"added_by": user_id}}}
        )
        # A circle list they made that nobody else put anything on was theirs alone.
        alone = await self._lists.delete_many({**shared, "created_by": user_id, "items": []})
        await self._lists.update_many(
            {**shared, "created_by": user_id}, {"$set": {"created_by": None}}
        )
        return {"lists": own.deleted_count + alone.deleted_count, "list_items": theirs}
