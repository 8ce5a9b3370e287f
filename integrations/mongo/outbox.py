"""The formation outbox: every formation request is written to MongoDB before it is queued.

Redis holds the job queue, but Redis may be down, emptied or restarted; MongoDB is the
record. A request is created here first (``pending``), then queued (``queued``), then
finished (``done``, or ``failed`` once it is given up). A request that stays open for
too long without a live job is queued again by the requeue cron, so a message that made
it into the journal is always formed eventually.

One document per request::

    {_id: request_id, thread_id, kind: "form"|"cold"|"quiet", session_id, status, open,
     created_at, queued_at, started_at, done_at, attempts, requeues, last_error, result}

``open`` is true while the request is ``pending`` or ``queued``; a unique partial index
on ``(thread_id, kind)`` among open requests (migration 0002) makes creation idempotent:
asking again while one is open returns that one. ``last_error`` holds an exception's
type and message only, never message text from the conversation.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from pymongo import ASCENDING, ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from memory.ids import new_id
from memory.job_ports import (
    ERROR_CHARS,
    FormationRequest,
    RequestKind,
    RequestStatus,
    describe_error,
)

Document = dict[str, Any]

#: The collection (named here, not in ``memory.constants``: the domain never reads it).
FORMATION_REQUESTS: Final = "formation_requests"


def request_from_doc(doc: Document) -> FormationRequest:
    return FormationRequest(
        id=str(doc["_id"]),
        thread_id=str(doc["thread_id"]),
        kind=RequestKind(doc["kind"]),
        status=RequestStatus(doc["status"]),
        created_at=doc["created_at"],
        session_id=doc.get("session_id"),
        queued_at=doc.get("queued_at"),
        started_at=doc.get("started_at"),
        done_at=doc.get("done_at"),
        attempts=int(doc.get("attempts", 0)),
        requeues=int(doc.get("requeues", 0)),
        last_error=doc.get("last_error"),
        result=doc.get("result"),
    )


class MongoOutbox:
    """``formation_requests``: the durable side of the formation queue (implements
    :class:`memory.job_ports.Outbox`)."""

    def __init__(self, db: AsyncDatabase[Document]) -> None:
        self._requests = db[FORMATION_REQUESTS]

    async def request(
        self,
        thread_id: str,
        kind: RequestKind,
        at: datetime,
        *,
        session_id: str | None = None,
    ) -> tuple[FormationRequest, bool]:
        """The open request of ``(thread_id, kind)``, created if there is none.

        Returns ``(request, created)``. Safe against a concurrent caller: the unique
        partial index lets one insert win; the other reads the winner's request.
        """
        for _ in range(5):
            fresh = new_id()
            try:
                doc = await self._requests.find_one_and_update(
                    {"thread_id": thread_id, "kind": kind.value, "open": True},
                    {
                        "$setOnInsert": {
                            "_id": fresh,
                            "session_id": session_id,
                            "status": RequestStatus.PENDING.value,
                            "created_at": at,
                            "queued_at": None,
                            "started_at": None,
                            "done_at": None,
                            "attempts": 0,
                            "requeues": 0,
                            "last_error": None,
                        }
                    },
                    upsert=True,
                    return_document=ReturnDocument.AFTER,
                )
            except DuplicateKeyError:
                continue  # another writer created it at the same moment: read theirs
            if doc is not None:
                return request_from_doc(doc), str(doc["_id"]) == fresh
        raise RuntimeError(f"could not create or read the open {kind} request of a thread")

    async def get(self, request_id: str) -> FormationRequest | None:
        doc = await self._requests.find_one({"_id": request_id})
        return request_from_doc(doc) if doc else None

    async def mark_queued(self, request_id: str, at: datetime, *, requeued: bool = False) -> bool:
        """The job is in the queue (again, when ``requeued``); False if no longer open."""
        update: Document = {"$set": {"status": RequestStatus.QUEUED.value, "queued_at": at}}
        if requeued:
            update["$inc"] = {"requeues": 1}
        result = await self._requests.update_one({"_id": request_id, "open": True}, update)
        return result.matched_count > 0

    async def begin(self, request_id: str, at: datetime) -> FormationRequest | None:
        """A job starts working on the request (it holds the thread's lock): count it."""
        doc = await self._requests.find_one_and_update(
            {"_id": request_id, "open": True},
            {"$set": {"started_at": at}, "$inc": {"attempts": 1}},
            return_document=ReturnDocument.AFTER,
        )
        return request_from_doc(doc) if doc else None

    async def note_error(self, request_id: str, error: BaseException) -> None:
        """Remember why the last attempt failed; the request stays open for a retry."""
        await self._requests.update_one(
            {"_id": request_id}, {"$set": {"last_error": describe_error(error)}}
        )

    async def mark_done(
        self, request_id: str, at: datetime, result: dict[str, Any] | None = None
    ) -> bool:
        """Finished; False if it was already finished (a re-run after a crash)."""
        outcome = await self._requests.update_one(
            {"_id": request_id, "open": True},
            {
                "$set": {"status": RequestStatus.DONE.value, "done_at": at, "result": result},
                "$unset": {"open": ""},
            },
        )
        return outcome.modified_count > 0

    async def mark_failed(self, request_id: str, at: datetime, error: str) -> bool:
        """Given up. The messages stay unformed in the journal: the next request forms them."""
        outcome = await self._requests.update_one(
            {"_id": request_id, "open": True},
            {
                "$set": {
                    "status": RequestStatus.FAILED.value,
                    "done_at": at,
                    "last_error": error[:ERROR_CHARS],
                },
                "$unset": {"open": ""},
            },
        )
        return outcome.modified_count > 0

    async def due_for_requeue(self, older_than: datetime) -> list[FormationRequest]:
        """Open requests written (pending) or last queued before ``older_than``."""
        cursor = self._requests.find(
            {
                "open": True,
                "$or": [
                    {"status": RequestStatus.PENDING.value, "created_at": {"$lt": older_than}},
                    {"status": RequestStatus.QUEUED.value, "queued_at": {"$lt": older_than}},
                ],
            }
        ).sort([("created_at", ASCENDING), ("_id", ASCENDING)])
        return [request_from_doc(d) async for d in cursor]

    async def open_requests(self, thread_id: str | None = None) -> list[FormationRequest]:
        """Every open request (of one thread), oldest first."""
        query: Document = {"open": True}
        if thread_id is not None:
            query["thread_id"] = thread_id
        cursor = self._requests.find(query).sort([("created_at", ASCENDING), ("_id", ASCENDING)])
        return [request_from_doc(d) async for d in cursor]

    async def all_requests(self, thread_id: str | None = None) -> list[FormationRequest]:
        """Every request, open or finished (for audits, tests and the admin CLI)."""
        query: Document = {} if thread_id is None else {"thread_id": thread_id}
        cursor = self._requests.find(query).sort([("created_at", ASCENDING), ("_id", ASCENDING)])
        return [request_from_doc(d) async for d in cursor]

    async def purge_finished_before(self, cutoff: datetime) -> int:
        """Drop finished requests older than ``cutoff`` (they are history, not state)."""
        result = await self._requests.delete_many(
            {"open": {"$exists": False}, "done_at": {"$lt": cutoff}}
        )
        return result.deleted_count
