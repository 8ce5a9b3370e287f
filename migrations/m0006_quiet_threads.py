"""An index for the quiet-thread sweep: unformed messages by age.

Every minute the formation cron looks for threads whose oldest unformed user message is
6 hours old (DESIGN.md §5). Only unformed messages are indexed (a partial index), so the
index stays as small as the backlog however long the journal's retention is.
"""

from __future__ import annotations

from pymongo import ASCENDING, IndexModel

from integrations.mongo.migrator import MigrationContext
from memory.constants import MESSAGES

VERSION = 6
NAME = "unformed messages by age (quiet-thread formation)"

INDEXES = [
    IndexModel(
        [("formed", ASCENDING), ("created_at", ASCENDING)],
        partialFilterExpression={"formed": False},
        name="unformed_by_age",
    ),
]


async def up(ctx: MigrationContext) -> None:
    await ctx.db[MESSAGES].create_indexes(INDEXES)
