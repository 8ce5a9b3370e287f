"""Reminders: their collection's indexes (issue 16).

The sweep asks every minute for reminders due or stuck in ``sending``; listing asks by
partition; a reply or a button press finds a reminder by the message that delivered it.
"""

from __future__ import annotations

from pymongo import ASCENDING, IndexModel

from integrations.mongo.migrator import MigrationContext
from integrations.mongo.reminders import REMINDERS

VERSION = 9
NAME = "reminders"

INDEXES = [
    IndexModel([("state", ASCENDING), ("next_due", ASCENDING)], name="due"),
    IndexModel(
        [("circle_id", ASCENDING), ("owner_user_id", ASCENDING), ("visibility", ASCENDING)],
        name="partition",
    ),
    IndexModel([("chat_id", ASCENDING), ("deliveries.message_id", ASCENDING)], name="message"),
    IndexModel([("creator_id", ASCENDING)], name="creator"),
    IndexModel([("for_user_id", ASCENDING)], name="for_user"),
]


async def up(ctx: MigrationContext) -> None:
    await ctx.db[REMINDERS].create_indexes(INDEXES)
