"""Reflections, consolidated blobs and clarifications in MongoDB.

Reads for people go through the privacy filter; a blob is upserted per (scope,
partition, session) and its reflections are marked absorbed only after it is saved,
so a crash between the two leaves reflections buffered (to be absorbed next time),
never lost. Every change bumps the partition's ``notes_version``, which the
always-in-context cache watches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from integrations.mongo import turn_memo
from integrations.mongo.codec import (
    clarification_from_doc,
    clarification_to_doc,
    consolidated_from_doc,
    consolidated_to_doc,
    reflection_from_doc,
    reflection_to_doc,
)
from integrations.mongo.turn_reads import memory_snapshot, visible_partition_records
from integrations.mongo.upsert import upsert, upsert_returning
from integrations.mongo.visible_reads import visible_documents
from memory.constants import CLARIFICATIONS, CONSOLIDATED, PARTITIONS, REFLECTIONS
from memory.models import (
    Clarification,
    Consolidated,
    Partition,
    Reflection,
    ReflectionScope,
    Viewer,
)
from memory.privacy import and_visible

Document = dict[str, Any]


def _scopes(session_id: str | None) -> list[Document]:
    """The always-in-context scopes: circle and user, and ``session_id``'s session."""
    scopes: list[Document] = [{"scope": {"$in": ["circle", "user"]}}]
    if session_id:
        scopes.append({"scope": "session", "session_id": session_id})
    return scopes


class MongoNotes:
    """The always-in-context side of memory, plus pending clarifications."""

    def __init__(self, db: AsyncDatabase[Document]) -> None:
        self._db = db
        self._reflections = db[REFLECTIONS]
        self._consolidated = db[CONSOLIDATED]
        self._clarifications = db[CLARIFICATIONS]
        self._partitions = db[PARTITIONS]

    async def _bump(self, partition: Partition) -> None:
        await upsert(
            self._partitions,
            {"_id": partition.key()},
            {"$inc": {"notes_version": 1}, "$setOnInsert": partition.as_fields()},
        )

    async def notes_versions(self, viewer: Viewer) -> dict[str, int]:
        """Versions of the notes the viewer may see, for cache invalidation."""
        memo = turn_memo.current()
        if memo is not None:
            parts = await memory_snapshot(self._db, memo, viewer)
            return {str(d["_id"]): int(d.get("notes_version", 0)) for d in parts[PARTITIONS]}
        records = await visible_partition_records(self._db, viewer)
        return {str(d["_id"]): int(d.get("notes_version", 0)) for d in records}

    # --- reflections -------------------------------------------------------------

    async def add_reflection(self, reflection: Reflection) -> bool:
        """Store a reflection; False if this exact one exists (a re-run formation)."""
        try:
            await self._reflections.insert_one(reflection_to_doc(reflection))
        except DuplicateKeyError:
            return False
        await self._bump(reflection.partition)
        return True

    async def unabsorbed(
        self, scope: ReflectionScope, partition: Partition, session_id: str | None = None
    ) -> list[Reflection]:
        query: Document = {"scope": scope.value, "pkey": partition.key(), "absorbed": False}
        if scope is ReflectionScope.SESSION:
            query["session_id"] = session_id
        cursor = self._reflections.find(query).sort("created_at", 1)
        return [reflection_from_doc(d) async for d in cursor]

    async def buffered_groups(self) -> list[tuple[ReflectionScope, Partition, str | None, int]]:
        """Every (scope, partition, session) with unabsorbed reflections, and how many."""
        pipeline: list[Document] = [
            {"$match": {"absorbed": False}},
            {
                "$group": {
                    "_id": {"scope": "$scope", "pkey": "$pkey", "session_id": "$session_id"},
                    "n": {"$sum": 1},
                    "visibility": {"$first": "$visibility"},
                    "circle_id": {"$first": "$circle_id"},
                    "owner_user_id": {"$first": "$owner_user_id"},
                }
            },
        ]
        out = []
        async for d in await self._reflections.aggregate(pipeline):
            scope = ReflectionScope(d["_id"]["scope"])
            session = d["_id"].get("session_id") if scope is ReflectionScope.SESSION else None
            out.append((scope, Partition.from_fields(d), session, int(d["n"])))
        return out

    async def mark_absorbed(self, ids: Sequence[str], blob_id: str) -> None:
        if not ids:
            return
        docs = [d async for d in self._reflections.find({"_id": {"$in": list(ids)}})]
        await self._reflections.update_many(
            {"_id": {"$in": list(ids)}}, {"$set": {"absorbed": True, "absorbed_into": blob_id}}
        )
        for partition in {Partition.from_fields(d) for d in docs}:
            await self._bump(partition)

    async def visible_reflections(
        self, viewer: Viewer, *, session_id: str | None
    ) -> list[Reflection]:
        """Unabsorbed reflections for the always-in-context block: circle and user scopes,
        and session scope only for the thread's current session."""
        query = {"absorbed": False, "$or": _scopes(session_id)}
        found = await visible_documents(self._reflections, viewer, query, sort=[("created_at", 1)])
        return [reflection_from_doc(d) for d in found]

    # --- consolidated blobs -------------------------------------------------------

    async def blob(
        self, scope: ReflectionScope, partition: Partition, session_id: str | None = None
    ) -> Consolidated | None:
        doc = await self._consolidated.find_one(
            {
                "scope": scope.value,
                "pkey": partition.key(),
                "session_id": session_id if scope is ReflectionScope.SESSION else None,
            }
        )
        return consolidated_from_doc(doc) if doc else None

    async def save_blob(self, blob: Consolidated) -> Consolidated:
        """Insert or replace the blob of (scope, partition, session)."""
        doc = consolidated_to_doc(blob)
        key = {
            "scope": doc["scope"],
            "visibility": doc["visibility"],
            "circle_id": doc["circle_id"],
            "owner_user_id": doc["owner_user_id"],
            "session_id": doc.get("session_id"),
        }
        doc_id = doc.pop("_id")
        saved = await upsert_returning(
            self._consolidated, key, {"$set": doc, "$setOnInsert": {"_id": doc_id}}
        )
        await self._bump(blob.partition)
        return consolidated_from_doc(saved)

    async def visible_blobs(self, viewer: Viewer, *, session_id: str | None) -> list[Consolidated]:
        query = {"$or": _scopes(session_id)}
        docs = await visible_documents(self._consolidated, viewer, query)
        return [consolidated_from_doc(d) for d in docs]

    # --- clarifications -------------------------------------------------------------

    async def add_clarification(self, item: Clarification) -> bool:
        try:
            await self._clarifications.insert_one(clarification_to_doc(item))
        except DuplicateKeyError:
            return False
        return True

    async def pending_clarification(self, viewer: Viewer) -> Clarification | None:
        """The oldest question waiting for this user in a partition visible here."""
        memo = turn_memo.current()
        if memo is not None:
            parts = await memory_snapshot(self._db, memo, viewer)
            waiting = [d for d in parts[CLARIFICATIONS] if d.get("status") == "pending"]
            first = min(waiting, key=lambda d: d["created_at"], default=None)
            return clarification_from_doc(first) if first else None
        doc = await self._first_clarification(viewer, "pending", oldest=True)
        return clarification_from_doc(doc) if doc else None

    async def asked_clarification(self, viewer: Viewer) -> Clarification | None:
        memo = turn_memo.current()
        if memo is not None:
            parts = await memory_snapshot(self._db, memo, viewer)
            asked = [d for d in parts[CLARIFICATIONS] if d.get("status") == "asked"]
            last = max(asked, key=lambda d: d["created_at"], default=None)
            return clarification_from_doc(last) if last else None
        doc = await self._first_clarification(viewer, "asked", oldest=False)
        return clarification_from_doc(doc) if doc else None

    async def _first_clarification(
        self, viewer: Viewer, status: str, *, oldest: bool
    ) -> Document | None:
        """The person's oldest or newest question in ``status`` that ``viewer`` may see:
        their questions first (the ``by_user_status`` index), then the privacy filter.
        In one ``$and`` the embedded server scanned every question."""
        pipeline: list[Document] = [
            {"$match": {"user_id": viewer.user_id, "status": status}},
            {"$match": and_visible(viewer)},
            {"$sort": {"created_at": 1 if oldest else -1}},
            {"$limit": 1},
        ]
        docs = [d async for d in await self._clarifications.aggregate(pipeline)]
        return docs[0] if docs else None

    async def set_clarification_status(
        self, clarification_id: str, status: str, at: datetime | None = None
    ) -> None:
        update: Document = {"status": status}
        if at is not None:
            update["resolved_at"] = at
        await self._clarifications.update_one({"_id": clarification_id}, {"$set": update})

    async def mark_clarification_asked(
        self, clarification_id: str, *, thread_id: str, at: datetime, after_message: int | None
    ) -> None:
        """Bind an asked question to where and when it was asked."""
        await self._clarifications.update_one(
            {"_id": clarification_id},
            {
                "$set": {
                    "status": "asked",
                    "asked_thread_id": thread_id,
                    "asked_at": at,
                    "asked_after_message": after_message,
                }
            },
        )

    # --- erasure and audit ----------------------------------------------------------

    async def delete_for_user(self, user_id: str) -> dict[str, int]:
        owned = {"owner_user_id": user_id}
        counts = {
            "reflections": (await self._reflections.delete_many(owned)).deleted_count,
            "consolidated": (await self._consolidated.delete_many(owned)).deleted_count,
            "clarifications": (
                await self._clarifications.delete_many({"$or": [owned, {"user_id": user_id}]})
            ).deleted_count,
        }
        return counts

    async def delete_for_circle(self, circle_id: str) -> dict[str, int]:
        in_circle = {"circle_id": circle_id}
        return {
            "reflections": (await self._reflections.delete_many(in_circle)).deleted_count,
            "consolidated": (await self._consolidated.delete_many(in_circle)).deleted_count,
            "clarifications": (await self._clarifications.delete_many(in_circle)).deleted_count,
        }

    async def delete_reflections(self, ids: Sequence[str]) -> list[Reflection]:
        docs = [d async for d in self._reflections.find({"_id": {"$in": list(ids)}})]
        if docs:
            await self._reflections.delete_many({"_id": {"$in": [d["_id"] for d in docs]}})
        removed = [reflection_from_doc(d) for d in docs]
        for partition in {r.partition for r in removed}:
            await self._bump(partition)
        return removed

    async def reflections_mentioning(
        self, partition_keys: Sequence[str], needles: Sequence[str]
    ) -> list[Reflection]:
        out = []
        async for d in self._reflections.find({"pkey": {"$in": list(partition_keys)}}):
            text = str(d.get("content", "")).casefold()
            if not needles or any(n.casefold() in text for n in needles if n):
                out.append(reflection_from_doc(d))
        return out

    async def blobs_mentioning(
        self, partition_keys: Sequence[str], needles: Sequence[str]
    ) -> list[Consolidated]:
        out = []
        async for d in self._consolidated.find({"pkey": {"$in": list(partition_keys)}}):
            text = str(d.get("content", "")).casefold()
            if not needles or any(n.casefold() in text for n in needles if n):
                out.append(consolidated_from_doc(d))
        return out

    async def delete_blob(self, blob_id: str) -> None:
        """Delete a blob; its surviving reflections return to the buffer so the next
        consolidation rebuilds it without what was forgotten."""
        doc = await self._consolidated.find_one_and_delete({"_id": blob_id})
        await self._reflections.update_many(
            {"absorbed_into": blob_id}, {"$set": {"absorbed": False, "absorbed_into": None}}
        )
        if doc:
            await self._bump(Partition.from_fields(doc))

    async def all_visible(self, viewer: Viewer) -> tuple[list[Reflection], list[Consolidated]]:
        """Every note (absorbed ones included, every scope) and summary the viewer may
        see: what a targeted forget looks through."""
        notes, blobs = await asyncio.gather(
            visible_documents(self._reflections, viewer),
            visible_documents(self._consolidated, viewer),
        )
        return [reflection_from_doc(d) for d in notes], [consolidated_from_doc(d) for d in blobs]

    async def rewrite_reflection(self, reflection_id: str, content: str) -> None:
        """Replace a note's text (a forget took sentences out of it)."""
        doc = await self._reflections.find_one_and_update(
            {"_id": reflection_id}, {"$set": {"content": content}}
        )
        if doc:
            await self._bump(Partition.from_fields(doc))

    async def rewrite_blob(self, blob_id: str, content: str) -> None:
        """Replace a summary's text (a forget took sentences out of it)."""
        doc = await self._consolidated.find_one_and_update(
            {"_id": blob_id}, {"$set": {"content": content}}
        )
        if doc:
            await self._bump(Partition.from_fields(doc))

    async def clarifications_for(
        self, user_id: str, partition_keys: Sequence[str] = ()
    ) -> list[Clarification]:
        """Questions for a user or in their partitions, and any in ``partition_keys``."""
        query: Document = {"$or": [{"user_id": user_id}, {"owner_user_id": user_id}]}
        if partition_keys:
            query["$or"].append({"pkey": {"$in": list(partition_keys)}})
        return [clarification_from_doc(d) async for d in self._clarifications.find(query)]

    async def delete_clarifications(self, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        result = await self._clarifications.delete_many({"_id": {"$in": list(ids)}})
        return result.deleted_count

    async def all_for_audit(self) -> dict[str, list[Any]]:
        return {
            "reflections": [reflection_from_doc(d) async for d in self._reflections.find({})],
            "consolidated": [consolidated_from_doc(d) async for d in self._consolidated.find({})],
            "clarifications": [
                clarification_from_doc(d) async for d in self._clarifications.find({})
            ],
        }
