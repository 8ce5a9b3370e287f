"""Circles, users and threads in MongoDB, and the viewer a person is in a thread.

Ids are Telegram's, as strings: a user's id is their Telegram user id, a circle's and a
thread's the Telegram chat id (negative for groups; a DM's chat id is the user's id).
Membership lives on the circle (``member_ids``); a viewer's circles are read at the
moment of each read, so someone who leaves a circle stops seeing it at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo import turn_memo
from integrations.mongo.thread_times import JournaledTimes
from integrations.mongo.turn_memo import MISSING
from integrations.mongo.turn_reads import (
    HISTORY_PREFETCH,
    active_circles_of,
    directory_snapshot,
    history_window_key,
    memoised_users,
)
from integrations.mongo.upsert import upsert, upsert_returning
from memory.constants import CIRCLES, SESSION_COLD_AFTER_SECONDS, THREADS, USERS
from memory.ids import new_id
from memory.models import FORGET_CHOICE, Circle, SessionTick, Thread, ThreadKind, User, Viewer
from memory.stores import TouchWrite

Document = dict[str, Any]
#: The thread's last incoming messages remembered by id, to know a redelivery before
#: its journal write (a reply may send that write while the model answers).
RECENT_IDS = 20
#: What touching a thread reads of it (in a reply turn, the directory read has it all).
TOUCH_FIELDS: Document = {
    f: 1
    for f in (
        "session_id",
        "last_at",
        "pending_erase",
        "pending_messages",
        "pending_tokens",
        "recent_at",
        "recent_ids",
    )
}


def thread_from_doc(doc: Document) -> Thread:
    return Thread(
        id=str(doc["_id"]),
        kind=ThreadKind(doc["kind"]),
        circle_id=doc.get("circle_id"),
        user_id=doc.get("user_id"),
        telegram_chat_id=doc.get("telegram_chat_id"),
        title=doc.get("title"),
    )


def circle_from_doc(doc: Document) -> Circle:
    return Circle(
        id=str(doc["_id"]),
        title=doc.get("title"),
        telegram_chat_id=doc.get("telegram_chat_id"),
        member_ids=list(doc.get("member_ids", [])),
        archived_at=doc.get("archived_at"),
        created_at=doc["created_at"],
    )


def user_from_doc(doc: Document) -> User:
    return User(
        id=str(doc["_id"]),
        telegram_user_id=doc.get("telegram_user_id"),
        name=doc.get("name") or str(doc["_id"]),
        username=doc.get("username"),
        created_at=doc["created_at"],
    )


class MongoDirectory:
    """Users, circles (with membership) and threads."""

    def __init__(self, db: AsyncDatabase[Document], times: JournaledTimes | None = None) -> None:
        self._db = db
        #: Alfred's messages' times the journal noted (shared with it; see :mod:`.thread_times`).
        self._times = times
        self._users = db[USERS]
        self._circles = db[CIRCLES]
        self._threads = db[THREADS]

    # --- users ------------------------------------------------------------------

    async def upsert_user(
        self, telegram_user_id: int, name: str, username: str | None, at: datetime
    ) -> User:
        """The user, created on first sight; safe when two replicas see them at once."""
        doc = await upsert_returning(
            self._users,
            {"_id": str(telegram_user_id)},
            {
                "$set": {"name": name, "username": username, "telegram_user_id": telegram_user_id},
                "$setOnInsert": {"created_at": at},
            },
        )
        return user_from_doc(doc)

    async def _by_id(self, collection: str, doc_id: str) -> Document | None:
        """A document by ``_id``: from this turn's directory read when it holds it
        (:func:`integrations.mongo.turn_reads.directory_snapshot`), else read."""
        memo = turn_memo.current()
        held = memo.get(collection, ("id", doc_id)) if memo is not None else MISSING
        if held is not MISSING:
            return held  # type: ignore[no-any-return]
        return await self._db[collection].find_one({"_id": doc_id})

    async def user(self, user_id: str) -> User | None:
        doc = await self._by_id(USERS, user_id)
        return user_from_doc(doc) if doc else None

    async def users(self, user_ids: list[str]) -> dict[str, User]:
        memo = turn_memo.current()
        held = memoised_users(memo, list(user_ids)) if memo is not None else None
        if held is not None:
            return {uid: user_from_doc(doc) for uid, doc in held.items() if doc}
        return {
            str(d["_id"]): user_from_doc(d)
            async for d in self._users.find({"_id": {"$in": user_ids}})
        }

    async def delete_user(self, user_id: str) -> dict[str, int]:
        """Remove a user everywhere in the directory (the erase cascade's last step).
        Returns what this call removed (zero for what an earlier, interrupted erase
        already had): their user record, their DM thread, their memberships."""
        left = await self._circles.update_many(
            {"member_ids": user_id}, {"$pull": {"member_ids": user_id}}
        )
        threads = await self._threads.delete_many({"kind": "dm", "user_id": user_id})
        users = await self._users.delete_one({"_id": user_id})
        return {
            USERS: users.deleted_count,
            THREADS: threads.deleted_count,
            "memberships": left.modified_count,
        }

    # --- circles ----------------------------------------------------------------

    async def upsert_circle(self, telegram_chat_id: int, title: str | None, at: datetime) -> Circle:
        """The circle of a group, created on first sight (and un-archived if the bot is back)."""
        circle_id = str(telegram_chat_id)
        doc = await upsert_returning(
            self._circles,
            {"_id": circle_id},
            {
                "$set": {"title": title, "telegram_chat_id": telegram_chat_id, "archived_at": None},
                "$setOnInsert": {"created_at": at, "member_ids": []},
            },
        )
        await upsert(
            self._threads,
            {"_id": circle_id},
            {
                "$set": {"title": title},
                "$setOnInsert": {
                    "kind": ThreadKind.GROUP.value,
                    "circle_id": circle_id,
                    "telegram_chat_id": telegram_chat_id,
                    "created_at": at,
                },
            },
        )
        return circle_from_doc(doc)

    async def circle(self, circle_id: str) -> Circle | None:
        doc = await self._by_id(CIRCLES, circle_id)
        return circle_from_doc(doc) if doc else None

    async def add_member(self, circle_id: str, user_id: str) -> bool:
        """True if the user was not a member before."""
        result = await self._circles.update_one(
            {"_id": circle_id}, {"$addToSet": {"member_ids": user_id}}
        )
        return result.modified_count > 0

    async def remove_member(self, circle_id: str, user_id: str) -> bool:
        result = await self._circles.update_one(
            {"_id": circle_id}, {"$pull": {"member_ids": user_id}}
        )
        return result.modified_count > 0

    async def archive_circle(self, circle_id: str, at: datetime) -> None:
        await self._circles.update_one({"_id": circle_id}, {"$set": {"archived_at": at}})

    async def archived_before(self, cutoff: datetime) -> list[Circle]:
        cursor = self._circles.find({"archived_at": {"$ne": None, "$lt": cutoff}})
        return [circle_from_doc(d) async for d in cursor]

    async def delete_circle(self, circle_id: str) -> None:
        await self._threads.delete_many({"circle_id": circle_id})
        await self._circles.delete_one({"_id": circle_id})

    async def circles_of(self, user_id: str) -> list[Circle]:
        """The active (not archived) circles the user is a member of."""
        memo = turn_memo.current()
        if memo is not None:
            held = memo.get(CIRCLES, ("of", user_id))
            if held is not MISSING:
                return [circle_from_doc(d) for d in held]
        found = await self._circles.aggregate(active_circles_of(user_id))
        return [circle_from_doc(d) async for d in found]

    # --- threads and viewers ----------------------------------------------------

    async def dm_thread(self, user_id: str, telegram_chat_id: int | None, at: datetime) -> Thread:
        doc = await upsert_returning(
            self._threads,
            {"_id": user_id},
            {
                "$setOnInsert": {
                    "kind": ThreadKind.DM.value,
                    "user_id": user_id,
                    "telegram_chat_id": telegram_chat_id,
                    "created_at": at,
                }
            },
        )
        return thread_from_doc(doc)

    async def thread(self, thread_id: str) -> Thread | None:
        doc = await self._by_id(THREADS, thread_id)
        return thread_from_doc(doc) if doc else None

    async def current_session(self, thread_id: str) -> str | None:
        """The id of the thread's current (or last) session, if it ever had one."""
        doc = await self._threads.find_one({"_id": thread_id}, {"session_id": 1})
        return str(doc["session_id"]) if doc and doc.get("session_id") else None

    async def viewer(self, user_id: str, thread: Thread) -> Viewer:
        """Who ``user_id`` is in ``thread``, with their circles as of now.

        In a reply turn this is the turn's first read: one query that also brings the
        circles' members, the person and the thread (:mod:`.turn_reads`)."""
        memo = turn_memo.current()
        if memo is not None:
            docs = await directory_snapshot(self._db, memo, user_id, thread.id)
            circle_ids = frozenset(str(d["_id"]) for d in docs)
            return Viewer(user_id=user_id, thread=thread, circle_ids=circle_ids)
        circles = frozenset(c.id for c in await self.circles_of(user_id))
        return Viewer(user_id=user_id, thread=thread, circle_ids=circles)

    # --- sessions and formation counters ----------------------------------------

    async def touch(
        self,
        thread_id: str,
        at: datetime,
        tokens: int,
        alongside: Callable[[SessionTick], Awaitable[None]] | None = None,
    ) -> SessionTick:
        """Record activity: a new session after 10 idle minutes; count toward formation.

        The session id is known before the update, so ``alongside`` (journaling the
        message under it) is sent together with it; the first failure of the two is
        raised once both have ended."""
        tick, write = await self.prepare_touch(thread_id, at, tokens)
        await write(alongside)
        return tick

    async def prepare_touch(
        self, thread_id: str, at: datetime, tokens: int, message_id: str | None = None
    ) -> tuple[SessionTick, TouchWrite]:
        """The session tick of a message at ``at``, and the write that records it, to be
        sent when the caller chooses (a reply sends it while the model answers).

        In a reply turn the thread was read with the viewer: nothing is read here, and
        the history's time window is kept for the turn's memory read at once. The
        counters the write leaves are kept for the formation trigger's :meth:`pending`.
        ``message_id`` is remembered among the thread's last few, and the tick says
        whether it was there already (a redelivery)."""
        memo = turn_memo.current()
        held = memo.get(THREADS, ("id", thread_id)) if memo is not None else MISSING
        doc = (
            await self._threads.find_one({"_id": thread_id}, TOUCH_FIELDS)
            if held is MISSING
            else held
        )
        previous = doc.get("session_id") if doc else None
        pending = (doc or {}).get("pending_erase") or {}
        last_at = doc.get("last_at") if doc else None
        cold = timedelta(seconds=SESSION_COLD_AFTER_SECONDS)
        new_session = previous is None or last_at is None or at - last_at >= cold
        session_id = new_id() if new_session else str(previous)
        # The times of the thread's last messages (this one and Alfred's since the last
        # update, when this process journaled them): the oldest bounds the history read.
        added = [*(self._times.take(thread_id) if self._times is not None else []), at]
        update: Document = {
            "$set": {"last_at": at, "session_id": session_id, "session_closed": False},
            "$inc": {"pending_messages": 1, "pending_tokens": tokens},
            "$push": {"recent_at": {"$each": added, "$slice": -HISTORY_PREFETCH}},
        }
        if message_id is not None:
            update["$push"]["recent_ids"] = {"$each": [message_id], "$slice": -RECENT_IDS}
        tick = SessionTick(
            session_id=session_id,
            new_session=new_session,
            previous_session_id=str(previous) if previous else None,
            erase_pending_for=frozenset(pending),
            choice_pending_for=frozenset(
                uid
                for uid, item in pending.items()
                if isinstance(item, dict) and item.get("target") == FORGET_CHOICE
            ),
            redelivered=message_id is not None
            and message_id in ((doc or {}).get("recent_ids") or ()),
        )
        # In a reply turn: the history's window, for a memory read sent before the write.
        window = history_from(doc, added) if memo is not None and doc is not None else None
        if memo is not None and doc is not None:
            seen = turn_memo.generation(THREADS)
            memo.put(THREADS, history_window_key(thread_id), window, seen=seen)

        async def write(alongside: Callable[[SessionTick], Awaitable[None]] | None) -> None:
            writes: list[Awaitable[object]] = [self._threads.update_one({"_id": thread_id}, update)]
            if alongside is not None:
                writes.append(alongside(tick))
            for outcome in await asyncio.gather(*writes, return_exceptions=True):
                if isinstance(outcome, BaseException):
                    raise outcome
            if memo is not None and doc is not None:
                counts = (
                    int(doc.get("pending_messages", 0)) + 1,
                    int(doc.get("pending_tokens", 0)) + tokens,
                )
                seen = turn_memo.generation(THREADS)  # the write dropped them: again
                memo.put(THREADS, ("pending", thread_id), counts, seen=seen)
                memo.put(THREADS, history_window_key(thread_id), window, seen=seen)

        return tick, write

    async def pending(self, thread_id: str) -> tuple[int, int]:
        """Messages and tokens journaled since the last formation request (as this
        turn's :meth:`touch` left them, when it ran in this turn)."""
        memo = turn_memo.current()
        if memo is not None:
            held = memo.get(THREADS, ("pending", thread_id), max_age=None)
            if held is not MISSING:
                return tuple(held)
        doc = await self._threads.find_one(
            {"_id": thread_id}, {"pending_messages": 1, "pending_tokens": 1}
        )
        if not doc:
            return 0, 0
        return int(doc.get("pending_messages", 0)), int(doc.get("pending_tokens", 0))

    async def reset_pending(self, thread_id: str) -> None:
        await self._threads.update_one(
            {"_id": thread_id}, {"$set": {"pending_messages": 0, "pending_tokens": 0}}
        )

    async def cold_threads(self, now: datetime) -> list[tuple[Thread, str]]:
        """Threads whose session went cold and has not been closed: (thread, session id)."""
        cutoff = now - timedelta(seconds=SESSION_COLD_AFTER_SECONDS)
        cursor = self._threads.find({"session_closed": False, "last_at": {"$lte": cutoff}})
        return [(thread_from_doc(d), str(d["session_id"])) async for d in cursor]

    async def close_session(self, thread_id: str, session_id: str) -> None:
        await self._threads.update_one(
            {"_id": thread_id, "session_id": session_id}, {"$set": {"session_closed": True}}
        )

    # --- confirmations ------------------------------------------------------------------

    async def set_pending_erase(
        self,
        thread_id: str,
        user_id: str,
        target: str,
        at: datetime,
        details: dict[str, Any] | None = None,
    ) -> None:
        """Remember that ``user_id`` asked for a full erase here and must confirm it, or
        (``target`` :data:`FORGET_CHOICE`, with the choices in ``details``) was asked
        which memory to forget. Either is answered, or lapses, with their next message."""
        pending = {**(details or {}), "target": target, "at": at}
        await self._threads.update_one(
            {"_id": thread_id}, {"$set": {f"pending_erase.{user_id}": pending}}
        )

    async def pop_pending_erase(self, thread_id: str, user_id: str) -> dict[str, Any] | None:
        doc = await self._threads.find_one_and_update(
            {"_id": thread_id, f"pending_erase.{user_id}": {"$exists": True}},
            {"$unset": {f"pending_erase.{user_id}": ""}},
        )
        if doc is None:
            return None
        pending = doc.get("pending_erase", {}).get(user_id)
        return dict(pending) if pending else None

    async def members(self, circle_id: str) -> list[User]:
        circle = await self.circle(circle_id)
        if circle is None:
            return []
        found = await self.users(circle.member_ids)
        return [found[uid] for uid in circle.member_ids if uid in found]


def history_from(thread: Document, added: Sequence[datetime]) -> datetime | None:
    """A time no older than the thread's newest :data:`HISTORY_PREFETCH` messages once
    messages at the times ``added`` (oldest first) are journaled (None while fewer are
    known): the oldest of the last known messages' times. Each known time is a distinct
    message's, so any message older than that has at least as many newer ones, and the
    history read may skip it; bounding the read keeps it as cheap in a thread of years
    as in a new one (the embedded server fetches every match before it sorts)."""
    times = [t for t in thread.get("recent_at") or [] if isinstance(t, datetime)]
    times = [*times, *added][-HISTORY_PREFETCH:]
    return min(times) if len(times) >= HISTORY_PREFETCH else None
