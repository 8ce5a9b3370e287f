"""Calendar state in MongoDB: one connection per user, and links from facts to events.

``calendar_connections`` (``_id`` = Alfred's user id) holds the encrypted token bundle,
the sync position (sync token, or the page token of an unfinished sync), the person's
choice whether others may add events to their calendar (default no), the status
(``new`` = a link was asked for, ``connected``, ``revoked``) and whether they were told
about a revocation. No event text is ever stored here.

``calendar_memory_links`` maps a derived *context* fact to the event it came from and
the moment it stops being true, so a duty can invalidate it when the event ends, and
the sync can invalidate it when the event is cancelled or moved.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pymongo import ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.upsert import upsert
from memory.calendar_ports import CalendarConnection, MemoryLink

Document = dict[str, Any]

CONNECTIONS = "calendar_connections"
LINKS = "calendar_memory_links"


def _connection(doc: Document) -> CalendarConnection:
    return CalendarConnection(
        user_id=str(doc["_id"]),
        status=doc.get("status", "new"),
        tokens=doc.get("tokens"),
        sync_token=doc.get("sync_token"),
        page_token=doc.get("page_token"),
        generation=int(doc.get("generation", 0)),
        full_sync=bool(doc.get("full_sync", True)),
        allow_others_to_create=bool(doc.get("allow_others_to_create", False)),
        notified_revoked=bool(doc.get("notified_revoked", False)),
        notice_attempts=int(doc.get("notice_attempts", 0)),
        notice_retry_at=doc.get("notice_retry_at"),
        time_zone=doc.get("time_zone"),
        connected_at=doc.get("connected_at"),
        last_sync_at=doc.get("last_sync_at"),
        next_sync_at=doc.get("next_sync_at"),
        failures=int(doc.get("failures", 0)),
        last_error=doc.get("last_error"),
    )


class MongoCalendarStore:
    """The two calendar collections, as :class:`memory.calendar_ports.CalendarStore`."""

    def __init__(self, db: AsyncDatabase[Document]) -> None:
        self._conn = db[CONNECTIONS]
        self._links = db[LINKS]

    # --- connections ------------------------------------------------------------------

    async def get(self, user_id: str) -> CalendarConnection | None:
        doc = await self._conn.find_one({"_id": user_id})
        return _connection(doc) if doc else None

    async def many(self, user_ids: list[str]) -> list[CalendarConnection]:
        cursor = self._conn.find({"_id": {"$in": user_ids}})
        return [_connection(d) async for d in cursor]

    async def set_pending(
        self, user_id: str, nonce: str, verifier: str, expires_at: datetime, now: datetime
    ) -> None:
        """Remember the one link in flight for ``user_id`` (a new link replaces it)."""
        await upsert(
            self._conn,
            {"_id": user_id},
            {
                "$set": {
                    "pending": {"nonce": nonce, "verifier": verifier, "expires_at": expires_at}
                },
                "$setOnInsert": {"status": "new", "created_at": now},
            },
        )

    async def take_pending(self, user_id: str, nonce: str, now: datetime) -> str | None:
        """The encrypted PKCE verifier of link ``nonce``, removed so it works only once."""
        doc = await self._conn.find_one_and_update(
            {"_id": user_id, "pending.nonce": nonce, "pending.expires_at": {"$gt": now}},
            {"$unset": {"pending": ""}},
        )
        if doc is None:
            return None
        return str(doc["pending"]["verifier"])

    async def save_unconfirmed(self, user_id: str, tokens: str, now: datetime) -> None:
        """A fresh connection, held until the person confirms the Google account: new
        tokens, sync from scratch once confirmed, nobody else may add events unless the
        person had said so before. Not due for a sync (``next_sync_at`` unset)."""
        await upsert(
            self._conn,
            {"_id": user_id},
            {
                "$set": {
                    "status": "unconfirmed",
                    "tokens": tokens,
                    "sync_token": None,
                    "page_token": None,
                    "full_sync": True,
                    "notified_revoked": False,
                    "connected_at": None,
                    "next_sync_at": None,
                    "failures": 0,
                    "last_error": None,
                },
                "$inc": {"generation": 1},
                "$setOnInsert": {"created_at": now, "allow_others_to_create": False},
            },
        )

    async def confirm(self, user_id: str, now: datetime) -> bool:
        """The person confirmed the account: connected, and due for the first sync now."""
        result = await self._conn.update_one(
            {"_id": user_id, "status": "unconfirmed", "tokens": {"$ne": None}},
            {"$set": {"status": "connected", "connected_at": now, "next_sync_at": now}},
        )
        return result.modified_count == 1

    async def save_tokens(self, user_id: str, tokens: str) -> None:
        """Store refreshed tokens (only while still connected)."""
        await self._conn.update_one(
            {"_id": user_id, "status": "connected"}, {"$set": {"tokens": tokens}}
        )

    async def set_time_zone(self, user_id: str, zone: str) -> None:
        await self._conn.update_one({"_id": user_id}, {"$set": {"time_zone": zone}})

    async def delete(self, user_id: str) -> CalendarConnection | None:
        """Disconnect: the document, tokens included, is removed."""
        doc = await self._conn.find_one_and_delete({"_id": user_id})
        return _connection(doc) if doc else None

    async def set_allow(self, user_id: str, allow: bool) -> bool:
        result = await self._conn.update_one(
            {"_id": user_id, "status": "connected"},
            {"$set": {"allow_others_to_create": allow}},
        )
        return result.matched_count > 0

    async def mark_revoked(self, user_id: str, now: datetime, reason: str) -> bool:
        """Stop syncing a calendar whose access is gone; its useless tokens are deleted.
        True if it was connected until now."""
        result = await self._conn.update_one(
            {"_id": user_id, "status": "connected"},
            {
                "$set": {
                    "status": "revoked",
                    "tokens": None,
                    "sync_token": None,
                    "page_token": None,
                    "revoked_at": now,
                    "last_error": reason,
                    "notified_revoked": False,
                    "notice_attempts": 0,
                    "notice_retry_at": None,
                }
            },
        )
        return result.modified_count > 0

    async def take_revoked_notice(self, user_id: str) -> bool:
        """True exactly once per revocation: the caller then tells the person."""
        result = await self._conn.update_one(
            {"_id": user_id, "status": "revoked", "notified_revoked": False},
            {"$set": {"notified_revoked": True}},
        )
        return result.modified_count > 0

    async def undo_revoked_notice(self, user_id: str, retry_at: datetime | None = None) -> None:
        """The notice could not be delivered: one more failed attempt; the sweep tries
        again from ``retry_at`` (the next DM reply delivers it in any case)."""
        await self._conn.update_one(
            {"_id": user_id, "status": "revoked"},
            {
                "$set": {"notified_revoked": False, "notice_retry_at": retry_at},
                "$inc": {"notice_attempts": 1},
            },
        )

    async def revoked_unnotified(self, now: datetime, max_attempts: int) -> list[str]:
        """Revoked users still owed the notice whose next attempt is due, fewer than
        ``max_attempts`` having failed."""
        cursor = self._conn.find(
            {
                "status": "revoked",
                "notified_revoked": False,
                "notice_attempts": {"$not": {"$gte": max_attempts}},
                "$or": [{"notice_retry_at": None}, {"notice_retry_at": {"$lte": now}}],
            },
            {"_id": 1},
        )
        return [str(d["_id"]) async for d in cursor]

    async def due(self, now: datetime, limit: int = 100) -> list[str]:
        """Connected users whose next sync is due, most overdue first."""
        cursor = (
            self._conn.find(
                {"status": "connected", "next_sync_at": {"$lte": now}},
                {"_id": 1},
            )
            .sort("next_sync_at", 1)
            .limit(limit)
        )
        return [str(d["_id"]) async for d in cursor]

    async def lease(self, user_id: str, now: datetime, until: datetime) -> bool:
        """Take the user's sync lease (two workers never sync one calendar at once)."""
        doc = await self._conn.find_one_and_update(
            {
                "_id": user_id,
                "status": "connected",
                "$or": [{"lease_until": None}, {"lease_until": {"$lte": now}}],
            },
            {"$set": {"lease_until": until}},
            return_document=ReturnDocument.AFTER,
        )
        return doc is not None

    async def release(self, user_id: str) -> None:
        await self._conn.update_one({"_id": user_id}, {"$set": {"lease_until": None}})

    async def start_full_sync(self, user_id: str) -> int:
        """Forget the sync position and open a new generation; returns it."""
        doc = await self._conn.find_one_and_update(
            {"_id": user_id},
            {
                "$set": {"sync_token": None, "page_token": None, "full_sync": True},
                "$inc": {"generation": 1},
            },
            return_document=ReturnDocument.AFTER,
        )
        return int(doc.get("generation", 0)) if doc else 0

    async def save_progress(
        self,
        user_id: str,
        *,
        page_token: str | None,
        sync_token: str | None,
        full_sync: bool,
        time_zone: str | None,
    ) -> None:
        """Where the sync got to, written after every page so a crash resumes there."""
        update: Document = {
            "page_token": page_token,
            "full_sync": full_sync,
        }
        if sync_token is not None or page_token is None:
            update["sync_token"] = sync_token
        if time_zone:
            update["time_zone"] = time_zone
        await self._conn.update_one({"_id": user_id, "status": "connected"}, {"$set": update})

    async def finish_run(
        self, user_id: str, now: datetime, next_sync_at: datetime, error: str | None = None
    ) -> None:
        """After a run: when to sync next, and the failure streak (reset on success)."""
        update: Document = {"$set": {"next_sync_at": next_sync_at, "lease_until": None}}
        if error is None:
            update["$set"].update({"last_sync_at": now, "failures": 0, "last_error": None})
        else:
            update["$set"]["last_error"] = error
            update["$inc"] = {"failures": 1}
        await self._conn.update_one({"_id": user_id}, update)

    # --- links -----------------------------------------------------------------------

    async def link(
        self,
        *,
        fact_id: str,
        owner_user_id: str,
        event_id: str,
        expires_at: datetime | None,
        content_hash: str,
        generation: int,
        now: datetime,
    ) -> None:
        """Tie a context fact to its event (idempotent: re-delivery refreshes it)."""
        await upsert(
            self._links,
            {"_id": f"{owner_user_id}:{event_id}:{fact_id}"},
            {
                "$set": {
                    "fact_id": fact_id,
                    "owner_user_id": owner_user_id,
                    "event_id": event_id,
                    "expires_at": expires_at,
                    "hash": content_hash,
                    "generation": generation,
                    "active": True,
                },
                "$setOnInsert": {"created_at": now},
            },
        )

    async def set_generation(self, link_ids: list[str], generation: int) -> None:
        """Links whose events a sync of ``generation`` saw again: they are not stale."""
        if link_ids:
            await self._links.update_many(
                {"_id": {"$in": link_ids}}, {"$set": {"generation": generation}}
            )

    async def links_for_events(
        self, owner_user_id: str, event_ids: list[str]
    ) -> dict[str, list[MemoryLink]]:
        """The active links of a batch of events, by event id (one query)."""
        found: dict[str, list[MemoryLink]] = {}
        if not event_ids:
            return found
        cursor = self._links.find(
            {"owner_user_id": owner_user_id, "event_id": {"$in": event_ids}, "active": True}
        )
        async for doc in cursor:
            link = _link(doc)
            found.setdefault(link.event_id, []).append(link)
        return found

    async def expired(self, now: datetime, limit: int = 500) -> list[MemoryLink]:
        cursor = self._links.find({"active": True, "expires_at": {"$ne": None, "$lte": now}}).limit(
            limit
        )
        return [_link(d) async for d in cursor]

    async def stale(self, owner_user_id: str, generation: int) -> list[MemoryLink]:
        """Links a finished full sync did not see: their events are gone."""
        cursor = self._links.find(
            {"owner_user_id": owner_user_id, "active": True, "generation": {"$lt": generation}}
        )
        return [_link(d) async for d in cursor]

    async def deactivate(self, link_ids: list[str], now: datetime) -> None:
        if link_ids:
            await self._links.update_many(
                {"_id": {"$in": link_ids}}, {"$set": {"active": False, "ended_at": now}}
            )

    async def delete_user(self, user_id: str) -> None:
        """Erase a user's calendar state entirely (disconnect, or "forget everything")."""
        await self._conn.delete_one({"_id": user_id})
        await self._links.delete_many({"owner_user_id": user_id})

    async def footprint(self, user_id: str) -> dict[str, int]:
        return {
            CONNECTIONS: await self._conn.count_documents({"_id": user_id}),
            LINKS: await self._links.count_documents({"owner_user_id": user_id}),
        }


def _link(doc: Document) -> MemoryLink:
    return MemoryLink(
        id=str(doc["_id"]),
        fact_id=str(doc["fact_id"]),
        owner_user_id=str(doc["owner_user_id"]),
        event_id=str(doc["event_id"]),
        content_hash=str(doc.get("hash", "")),
        expires_at=doc.get("expires_at"),
        generation=int(doc.get("generation", 0)),
    )
