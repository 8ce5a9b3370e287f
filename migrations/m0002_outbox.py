"""The formation outbox: its collection and the index that makes requests idempotent."""

from __future__ import annotations

from pymongo import ASCENDING, IndexModel
from pymongo.errors import OperationFailure

from integrations.mongo.migrator import MigrationContext
from integrations.mongo.outbox import FORMATION_REQUESTS

VERSION = 2
NAME = "formation outbox (formation_requests)"

INDEXES = [
    # One open request per (thread, kind): asking again returns the open one.
    IndexModel(
        [("thread_id", ASCENDING), ("kind", ASCENDING)],
        unique=True,
        partialFilterExpression={"open": True},
        name="one_open_per_thread_kind",
    ),
    # The requeue cron's scan of open requests by age.
    IndexModel(
        [("open", ASCENDING), ("status", ASCENDING), ("queued_at", ASCENDING)],
        name="open_by_age",
    ),
    # Purging finished requests after a while.
    IndexModel([("status", ASCENDING), ("done_at", ASCENDING)], name="finished"),
]


async def up(ctx: MigrationContext) -> None:
    if FORMATION_REQUESTS not in set(await ctx.db.list_collection_names()):
        try:
            await ctx.db.create_collection(FORMATION_REQUESTS)
        except OperationFailure as exc:  # created meanwhile by a concurrent writer
            if exc.code != 48:  # NamespaceExists
                raise
    await ctx.db[FORMATION_REQUESTS].create_indexes(INDEXES)
