"""An index of reminders that begins with the partition fields, in the privacy filter's order.

Listing a person's reminders ("what are my reminders", a cancel, a move, an export)
reads under the privacy filter one arm at a time (:func:`memory.privacy.visibility_arms`):
visibility first, then the circles. Migration 9's partition index begins with the
circle, which the embedded server cannot use for an arm that names the visibility and a
list of circles; without this index it read every household's reminders.
"""

from __future__ import annotations

from pymongo import ASCENDING, IndexModel

from integrations.mongo.migrator import MigrationContext
from integrations.mongo.reminders import REMINDERS

VERSION = 13
NAME = "reminders by partition (reads under the privacy filter)"

INDEXES = [
    IndexModel(
        [("visibility", ASCENDING), ("circle_id", ASCENDING), ("owner_user_id", ASCENDING)],
        name="visible",
    )
]


async def up(ctx: MigrationContext) -> None:
    await ctx.db[REMINDERS].create_indexes(INDEXES)
