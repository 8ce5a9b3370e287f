"""Google Calendar: the connections (encrypted tokens, sync position) and the links from
derived context facts to their events (for expiry and cancellation)."""

from __future__ import annotations

from pymongo import ASCENDING, IndexModel
from pymongo.errors import OperationFailure

from integrations.mongo.calendar_store import CONNECTIONS, LINKS
from integrations.mongo.migrator import MigrationContext

VERSION = 3
NAME = "calendar connections and calendar memory links"

INDEXES: dict[str, list[IndexModel]] = {
    CONNECTIONS: [
        # The sync sweep: connected calendars whose next sync is due.
        IndexModel([("status", ASCENDING), ("next_sync_at", ASCENDING)], name="due"),
        # Revocation notices still owed.
        IndexModel([("status", ASCENDING), ("notified_revoked", ASCENDING)], name="revoked_notice"),
    ],
    LINKS: [
        # The expiry duty: active links whose event is over.
        IndexModel([("active", ASCENDING), ("expires_at", ASCENDING)], name="expiry"),
        # A cancelled or changed event's links.
        IndexModel(
            [("owner_user_id", ASCENDING), ("event_id", ASCENDING), ("active", ASCENDING)],
            name="by_event",
        ),
        # Links a full sync did not see (by generation).
        IndexModel(
            [("owner_user_id", ASCENDING), ("active", ASCENDING), ("generation", ASCENDING)],
            name="by_generation",
        ),
    ],
}


async def up(ctx: MigrationContext) -> None:
    existing = set(await ctx.db.list_collection_names())
    for name, models in INDEXES.items():
        if name not in existing:
            try:
                await ctx.db.create_collection(name)
            except OperationFailure as exc:  # created meanwhile by a concurrent writer
                if exc.code != 48:  # NamespaceExists
                    raise
        await ctx.db[name].create_indexes(models)
