"""Moving a circle to a new chat id: Telegram's upgrade of a group to a supergroup.

A circle's id is its group's chat id, and that id is in every partition of the circle.
When a group becomes a supergroup, Telegram gives it a new id; without a move, the
circle's memories would stay behind under an id no chat uses again, and the group would
start over with nothing. The supergroup has the same members (Telegram moves them), so
what the old group could read, the new one may read: the move changes the id and nothing
about who sees what. DM partitions carry no circle id and are never touched.

The move is idempotent and safe to repeat or to resume after a crash: the old circle's
document goes last, so as long as it exists there may be something left to move, and a
second run moves what the first did not. Documents written under the old id while the
move runs (a formation finishing at that moment) are picked up by a last sweep.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from integrations.mongo.lists import LISTS
from integrations.mongo.upsert import upsert
from memory.constants import (
    CIRCLES,
    CONSOLIDATED,
    FACTS,
    MESSAGES,
    PARTITIONED_COLLECTIONS,
    PARTITIONS,
    REFLECTIONS,
    THREADS,
)
from memory.models import CircleMove, Partition

Document = dict[str, Any]

#: Collections whose documents also name their thread (a group thread's id is the chat id).
THREADED = frozenset({REFLECTIONS, MESSAGES})
SWEEPS = 3


def _moved_partition(doc: Document, new_id: str) -> Partition:
    return Partition.from_fields({**doc, "circle_id": new_id})


async def _move_documents(
    coll: AsyncCollection[Document], old_id: str, new_id: str, move: CircleMove
) -> None:
    """Re-key every document of the old circle in ``coll``, partition by partition
    (a circle has one circle-level partition and one per member, so few statements)."""
    groups = await coll.distinct("owner_user_id", {"circle_id": old_id})
    for owner in groups:
        for visibility in await coll.distinct(
            "visibility", {"circle_id": old_id, "owner_user_id": owner}
        ):
            where = {"circle_id": old_id, "owner_user_id": owner, "visibility": visibility}
            partition = _moved_partition(where, new_id)
            if coll.name == FACTS:
                await _drop_fact_duplicates(coll, where, partition, move)
                move.fact_ids += [str(d["_id"]) async for d in coll.find(where, {"_id": 1})]
            if coll.name == CONSOLIDATED:
                await _drop_consolidated_duplicates(coll, where, partition, move)
            update: Document = {"$set": {"circle_id": new_id, "pkey": partition.key()}}
            if coll.name in THREADED:
                update["$set"]["thread_id"] = new_id
            result = await coll.update_many(where, update)
            move.moved[coll.name] = move.moved.get(coll.name, 0) + result.modified_count
    if coll.name == FACTS:  # provenance names the thread the fact was learned in
        await coll.update_many(
            {"circle_id": new_id, "provenance.thread_id": old_id},
            {"$set": {"provenance.thread_id": new_id}},
        )


async def _move_lists(
    db: AsyncDatabase[Document], old_id: str, new_id: str, move: CircleMove
) -> None:
    """The circle's shared lists follow it (they are not memories, but they live in the
    circle's partition and its group thread). A list of the same name already made in
    the supergroup takes the old one's items it lacks; then the old one goes."""
    coll = db[LISTS]
    async for doc in coll.find({"circle_id": old_id}):
        try:
            result = await coll.update_one(
                {"_id": doc["_id"]}, {"$set": {"circle_id": new_id, "thread_id": new_id}}
            )
            moved = result.modified_count
        except DuplicateKeyError:
            where = {**Partition.from_fields({**doc, "circle_id": new_id}).as_fields()}
            there = await coll.find_one({**where, "key": doc["key"]}) or {}
            have = {i.get("key") for i in there.get("items", [])}
            extra = [i for i in doc.get("items", []) if i.get("key") not in have]
            await coll.update_one(
                {**where, "key": doc["key"]}, {"$push": {"items": {"$each": extra}}}
            )
            await coll.delete_one({"_id": doc["_id"]})
            moved = 1
        move.moved[LISTS] = move.moved.get(LISTS, 0) + moved


async def _drop_fact_duplicates(
    coll: AsyncCollection[Document], where: Document, target: Partition, move: CircleMove
) -> None:
    """A current fact the new partition already holds word for word (someone said it in
    the supergroup before the move) would break the unique (partition, hash) key: the
    old copy goes, the one already there stays."""
    there = {
        d["hash"]
        async for d in coll.find({**target.as_fields(), "current": True}, {"hash": 1})
        if "hash" in d
    }
    if not there:
        return
    clashing = {**where, "current": True, "hash": {"$in": sorted(there)}}
    async for doc in coll.find(clashing, {"mem0_id": 1}):
        if doc.get("mem0_id"):
            move.dropped_mem0_ids.append(str(doc["mem0_id"]))
    result = await coll.delete_many(clashing)
    move.merged_duplicates += result.deleted_count


async def _drop_consolidated_duplicates(
    coll: AsyncCollection[Document], where: Document, target: Partition, move: CircleMove
) -> None:
    """One consolidated note per (scope, partition, session): where the new partition
    already has one (made in the supergroup since), the older circle's note, built from
    far more history, is kept and the young one goes; its reflections stay and are
    consolidated again later."""
    async for doc in coll.find(where, {"scope": 1, "session_id": 1}):
        clash = {
            **target.as_fields(),
            "scope": doc.get("scope"),
            "session_id": doc.get("session_id"),
        }
        result = await coll.delete_many(clash)
        move.merged_duplicates += result.deleted_count


async def _move_partition_versions(db: AsyncDatabase[Document], old_id: str, new_id: str) -> None:
    """The new partitions' version documents, newer than anything cached for either id."""
    coll = db[PARTITIONS]
    async for doc in coll.find({"circle_id": old_id}):
        partition = _moved_partition(doc, new_id)
        await upsert(
            coll,
            {"_id": partition.key()},
            {
                "$inc": {"version": int(doc.get("version", 0)) + 1},
                "$setOnInsert": partition.as_fields(),
            },
        )
        await coll.delete_one({"_id": doc["_id"]})


async def _move_thread(
    db: AsyncDatabase[Document], old_id: str, new_id: str, new_chat_id: int
) -> None:
    """The group's thread: copied under the new id, or, if the supergroup already has
    one, its formation counters are carried over (the moved messages still need forming)."""
    threads = db[THREADS]
    old = await threads.find_one({"_id": old_id})
    if old is None:
        return
    copy = {
        **{k: v for k, v in old.items() if k != "pending_erase"},
        "_id": new_id,
        "circle_id": new_id,
        "telegram_chat_id": new_chat_id,
    }
    try:
        await threads.insert_one(copy)
    except DuplicateKeyError:
        await threads.update_one(
            {"_id": new_id},
            {
                "$inc": {
                    "pending_messages": int(old.get("pending_messages", 0)),
                    "pending_tokens": int(old.get("pending_tokens", 0)),
                }
            },
        )
    await threads.delete_one({"_id": old_id})


async def move_circle_documents(
    db: AsyncDatabase[Document],
    old_id: str,
    new_id: str,
    *,
    new_chat_id: int,
    title: str | None,
    at: datetime,
) -> CircleMove:
    """Move everything of circle ``old_id`` to ``new_id``; nothing to do if there is no
    circle ``old_id`` (never seen, or already moved)."""
    move = CircleMove(old_id=old_id, new_id=new_id)
    circles = db[CIRCLES]
    old = await circles.find_one({"_id": old_id})
    if old is None or old_id == new_id:
        return move
    members = list(old.get("member_ids", []))
    await upsert(
        circles,
        {"_id": new_id},
        {
            "$set": {
                "title": title if title is not None else old.get("title"),
                "telegram_chat_id": new_chat_id,
                "archived_at": None,
                # the group's time zone ("our time zone is …") moves with it
                **({"time_zone": old["time_zone"]} if old.get("time_zone") else {}),
            },
            "$setOnInsert": {"created_at": old.get("created_at", at)},
            "$addToSet": {"member_ids": {"$each": members}, "moved_from": old_id},
        },
    )
    await _move_thread(db, old_id, new_id, new_chat_id)
    for _ in range(SWEEPS):  # until a pass finds nothing more under the old id
        before = sum(move.moved.values())
        for name in PARTITIONED_COLLECTIONS:
            await _move_documents(db[name], old_id, new_id, move)
        if sum(move.moved.values()) == before:
            break
    await _move_lists(db, old_id, new_id, move)
    await _move_partition_versions(db, old_id, new_id)
    await circles.delete_one({"_id": old_id})
    move.fact_ids = sorted(set(move.fact_ids))
    return move


class MongoCircleMover:
    """The :class:`memory.reply_ports.CircleMover` port on MongoDB."""

    def __init__(self, db: AsyncDatabase[Document]) -> None:
        self._db = db

    async def move_circle(
        self, old_chat_id: int, new_chat_id: int, title: str | None, at: datetime
    ) -> CircleMove:
        return await move_circle_documents(
            self._db,
            str(old_chat_id),
            str(new_chat_id),
            new_chat_id=new_chat_id,
            title=title,
            at=at,
        )
