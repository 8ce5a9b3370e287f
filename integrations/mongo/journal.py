"""The message journal: raw messages kept for formation, then for a retention window."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pymongo import ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from integrations.mongo import turn_memo
from integrations.mongo.codec import (
    JOURNALED_NS,
    NEWEST_FIRST,
    OLDEST_FIRST,
    message_from_doc,
    message_to_doc,
)
from integrations.mongo.thread_times import JournaledTimes
from integrations.mongo.turn_memo import MISSING
from integrations.mongo.turn_reads import (
    HISTORY_PREFETCH,
    UNFORMED_PREFETCH,
    history_window,
    memory_snapshot,
    messages_part,
    unformed_visible_pipeline,
)
from integrations.mongo.visible_reads import visible_documents
from memory.constants import MESSAGES
from memory.erasure import PLACEHOLDER
from memory.models import Message, Role, Viewer

Document = dict[str, Any]


def _of_user(user_id: str) -> Document:
    """A user's messages and Alfred's replies to them: everything in their partitions.

    Alfred's replies carry no ``user_id`` but the partition of the person answered, and
    they often quote what that person said, so the forget cascades must reach them too.
    """
    return {"$or": [{"user_id": user_id}, {"owner_user_id": user_id}]}


class MongoJournal:
    """``messages``: every message Alfred saw or sent, with its partition."""

    def __init__(self, db: AsyncDatabase[Document], times: JournaledTimes | None = None) -> None:
        self._db = db
        self._messages = db[MESSAGES]
        #: Where Alfred's messages' times wait for their thread's next update (shared
        #: with the directory, :mod:`.thread_times`); None keeps no times.
        self._times = times

    async def append(self, message: Message) -> bool:
        """Journal a message; False if it was already there (a redelivered update)."""
        try:
            await self._messages.insert_one(
                {**message_to_doc(message), JOURNALED_NS: time.time_ns()}
            )
        except DuplicateKeyError:
            return False  # stored before, at a time of its own: nothing to note
        if self._times is not None and message.role is Role.AGENT:
            self._times.add(message.thread_id, message.created_at)
        return True

    def _deleting(self) -> None:
        """Messages are about to go: a time noted for one would stand for nothing (the
        history would only be shorter by it, but the times are cheap to drop)."""
        if self._times is not None:
            self._times.clear()

    async def unformed(self, thread_id: str, *, limit: int = 200) -> list[Message]:
        """The oldest messages of a thread not yet formed into memories (a set-aside
        batch waits for an operator and does not hold up the messages after it)."""
        cursor = (
            self._messages.find(
                {"thread_id": thread_id, "formed": False, "set_aside": {"$ne": True}}
            )
            .sort(list(OLDEST_FIRST))
            .limit(limit)
        )
        return [message_from_doc(d) async for d in cursor]

    async def quiet_threads(self, older_than: datetime, *, limit: int = 500) -> list[str]:
        """Threads with an unformed user message written at or before ``older_than``
        (set-aside ones wait for an operator): formed however few messages they have."""
        pipeline: list[Document] = [
            {
                "$match": {
                    "formed": False,
                    "set_aside": {"$ne": True},
                    "role": Role.USER.value,
                    "created_at": {"$lte": older_than},
                }
            },
            {"$group": {"_id": "$thread_id"}},
            {"$sort": {"_id": 1}},
            {"$limit": limit},
        ]
        cursor = await self._messages.aggregate(pipeline)
        return [str(d["_id"]) async for d in cursor]

    async def count_unformed(self, thread_id: str) -> int:
        return await self._messages.count_documents({"thread_id": thread_id, "formed": False})

    async def mark_formed(self, ids: Sequence[str], at: datetime) -> None:
        if ids:
            await self._messages.update_many(
                {"_id": {"$in": list(ids)}}, {"$set": {"formed": True, "formed_at": at}}
            )

    async def note_formation_failure(
        self, ids: Sequence[str], at: datetime, *, set_aside_after: int
    ) -> int:
        """Count one failed formation job on each message of a batch; those that reach
        ``set_aside_after`` failures are set aside. Returns how many were set aside now."""
        if not ids:
            return 0
        await self._messages.update_many(
            {"_id": {"$in": list(ids)}},
            {"$inc": {"formation_failures": 1}, "$set": {"last_formation_failure_at": at}},
        )
        result = await self._messages.update_many(
            {
                "_id": {"$in": list(ids)},
                "formed": False,
                "set_aside": {"$ne": True},
                "formation_failures": {"$gte": set_aside_after},
            },
            {"$set": {"set_aside": True, "set_aside_at": at}},
        )
        return result.modified_count

    async def set_aside_counts(self) -> dict[str, int]:
        """Set-aside messages per thread (for ``stats`` and ``retry-formation``)."""
        pipeline: list[Document] = [
            {"$match": {"set_aside": True}},
            {"$group": {"_id": "$thread_id", "n": {"$sum": 1}}},
        ]
        cursor = await self._messages.aggregate(pipeline)
        return {str(d["_id"]): int(d["n"]) async for d in cursor}

    async def release_set_aside(self, thread_id: str | None = None) -> dict[str, int]:
        """Put set-aside messages (of one thread, or all) back in line for formation with
        a fresh failure count. Returns the released messages per thread."""
        counts = await self.set_aside_counts()
        if thread_id is not None:
            counts = {t: n for t, n in counts.items() if t == thread_id}
        if counts:
            await self._messages.update_many(
                {"set_aside": True, "thread_id": {"$in": list(counts)}},
                {
                    "$set": {"set_aside": False, "formation_failures": 0},
                    "$unset": {"set_aside_at": "", "last_formation_failure_at": ""},
                },
            )
        return counts

    async def mark_handled(self, ids: Sequence[str]) -> None:
        if ids:
            await self._messages.update_many(
                {"_id": {"$in": list(ids)}}, {"$set": {"handled": True}}
            )

    async def recent(
        self, thread_id: str, *, limit: int = 20, since: datetime | None = None
    ) -> list[Message]:
        """The last messages of a thread, oldest first (conversation history for replies),
        none older than ``since`` when it is given.

        Not served by the turn's memory read, the read is bounded in time: by ``since``,
        and in a reply turn by the time the turn's journal write left for the history
        read (:func:`integrations.mongo.directory.history_from`), which at least
        :data:`HISTORY_PREFETCH` messages are newer than. The embedded server fetches
        every message that matches before it sorts, so without a bound "forget that" or
        "pin that" in a thread of years read the whole thread."""
        memo = turn_memo.current()  # served by this turn's memory read, if it was made
        key = memo.get(MESSAGES, ("thread", thread_id)) if memo is not None else MISSING
        held = memo.get(MESSAGES, key) if memo is not None and key is not MISSING else MISSING
        if held is not MISSING and limit <= HISTORY_PREFETCH:
            history = messages_part(held, "history")
            newest = [d for d in history if since is None or d["created_at"] >= since][:limit]
            return list(reversed([message_from_doc(d) for d in newest]))
        bounds = [since] if since is not None else []
        window = history_window(memo, thread_id) if memo is not None else None
        if window is not None and limit <= HISTORY_PREFETCH:
            bounds.append(window)
        query: Document = {"thread_id": thread_id}
        if bounds:  # the thread_time index serves a time range after the thread
            query["created_at"] = {"$gte": max(bounds)}
        cursor = self._messages.find(query).sort(list(NEWEST_FIRST)).limit(limit)
        return list(reversed([message_from_doc(d) async for d in cursor]))

    async def unformed_visible(self, viewer: Viewer, *, limit: int) -> list[Message]:
        """The newest user messages ``viewer`` may see that formation has not reached
        yet (the recent-messages retrieval leg), the privacy filter inside the query.
        What an explicit request already stored (``handled``) is a fact already."""
        memo = turn_memo.current()
        if memo is not None and limit <= UNFORMED_PREFETCH:
            parts = await memory_snapshot(self._db, memo, viewer)
            newest = messages_part(parts[MESSAGES], "unformed")[:limit]
            return [message_from_doc(d) for d in newest]
        pipeline = unformed_visible_pipeline(viewer, limit)
        return [message_from_doc(d) async for d in await self._messages.aggregate(pipeline)]

    async def recent_by_user(self, user_id: str, *, limit: int = 500) -> list[Message]:
        """A user's latest messages and Alfred's replies to them, for the forget cascade
        (operator scope)."""
        cursor = self._messages.find(_of_user(user_id)).sort("created_at", -1).limit(limit)
        return [message_from_doc(d) async for d in cursor]

    async def visible(self, viewer: Viewer, *, limit: int = 0) -> list[Message]:
        found = await visible_documents(
            self._messages, viewer, sort=[("created_at", -1)], limit=limit
        )
        return [message_from_doc(d) for d in found]

    async def delete_containing(self, user_id: str, needles: Sequence[str]) -> int:
        """Hard-delete a user's messages, and Alfred's replies to them, that mention any of
        ``needles`` (forget cascade)."""
        # Whole words only ("forget that art" must not take every message saying "part"),
        # and never Alfred's own placeholders ("[a request to forget something]"), which
        # hold no one's words: deleting one would lose the record that a request was made.
        patterns = [
            re.compile(rf"(?<!\w){re.escape(n.strip())}(?!\w)", re.IGNORECASE)
            for n in needles
            if n and n.strip()
        ]
        deleted = 0
        async for doc in self._messages.find(_of_user(user_id), {"text": 1}):
            text = str(doc.get("text", ""))
            if PLACEHOLDER.fullmatch(text.strip()):
                continue
            if any(p.search(text) for p in patterns):
                self._deleting()
                await self._messages.delete_one({"_id": doc["_id"]})
                deleted += 1
        return deleted

    async def delete_by_ids(self, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        self._deleting()
        result = await self._messages.delete_many({"_id": {"$in": list(ids)}})
        return result.deleted_count

    async def redact(self, ids: Sequence[str], text: str) -> int:
        """Replace the text of messages (a question that listed what is being forgotten)."""
        if not ids:
            return 0
        result = await self._messages.update_many(
            {"_id": {"$in": list(ids)}}, {"$set": {"text": text}}
        )
        return result.modified_count

    async def edit(self, message_id: str, user_id: str, text: str) -> Message | None:
        """A person edited their message: the journal keeps the new text only, and the
        message is unformed and unhandled again, so what is learned from it is learned
        from what it says now. Returns the message as it was before the edit (an edit
        to the text it already has, a redelivery, changes nothing). Only the author's own
        message is edited: Telegram lets nobody else edit it, and neither does this."""
        doc = await self._messages.find_one_and_update(
            {"_id": message_id, "user_id": user_id, "text": {"$ne": text}},
            {"$set": {"text": text, "formed": False, "handled": False}},
            return_document=ReturnDocument.BEFORE,
        )
        if doc is None:
            doc = await self._messages.find_one({"_id": message_id, "user_id": user_id})
        return message_from_doc(doc) if doc is not None else None

    async def delete_user(self, user_id: str) -> int:
        """Every message a user wrote, and every reply Alfred gave them, in a DM or a group."""
        self._deleting()
        result = await self._messages.delete_many(_of_user(user_id))
        return result.deleted_count

    async def delete_for_circle(self, circle_id: str) -> int:
        self._deleting()
        result = await self._messages.delete_many({"circle_id": circle_id})
        return result.deleted_count

    async def purge_formed_before(self, cutoff: datetime) -> int:
        """Drop raw messages formed before ``cutoff`` (the retention window)."""
        self._deleting()
        result = await self._messages.delete_many({"formed": True, "formed_at": {"$lt": cutoff}})
        return result.deleted_count

    async def all_for_audit(self) -> list[Message]:
        return [message_from_doc(d) async for d in self._messages.find({})]
