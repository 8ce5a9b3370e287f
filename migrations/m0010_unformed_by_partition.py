"""An index for the recent-messages leg of a reply: a partition's unformed user messages,
newest first.

Every reply reads the newest user messages formation has not reached yet in each
partition the viewer may see (one filter of plain equalities per partition,
:func:`memory.privacy.and_visible_branches`). Only unformed user messages are indexed
(a partial index), so each read touches that partition's backlog, not the whole journal:
on the embedded server, which plans only from a filter's top-level equalities, the read
otherwise scanned every message ever kept.
"""

from __future__ import annotations

from pymongo import ASCENDING, DESCENDING, IndexModel

from integrations.mongo.migrator import MigrationContext
from memory.constants import MESSAGES
from memory.models import Role

VERSION = 10
NAME = "unformed user messages by partition (the reply's recent-messages leg)"

INDEXES = [
    IndexModel(
        [
            ("visibility", ASCENDING),
            ("circle_id", ASCENDING),
            ("owner_user_id", ASCENDING),
            ("created_at", DESCENDING),
        ],
        partialFilterExpression={"formed": False, "role": Role.USER.value},
        name="unformed_user_partition",
    ),
]


async def up(ctx: MigrationContext) -> None:
    await ctx.db[MESSAGES].create_indexes(INDEXES)
