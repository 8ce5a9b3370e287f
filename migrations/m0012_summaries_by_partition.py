"""An index of the consolidated summaries by partition, for reads under the privacy filter.

The summaries' one index begins with the scope (it keeps one summary per scope,
partition and session). The reads of a viewer's summaries (the always-in-context block,
a forget) open with the partitions they may see (:func:`memory.privacy.visibility_arms`),
which the embedded server serves only from an index that begins with the partition
fields; without one it read every household's summaries.
"""

from __future__ import annotations

from pymongo import ASCENDING, IndexModel

from integrations.mongo.migrator import MigrationContext
from memory.constants import CONSOLIDATED

VERSION = 12
NAME = "summaries by partition (reads under the privacy filter)"

INDEXES = [
    IndexModel(
        [("visibility", ASCENDING), ("circle_id", ASCENDING), ("owner_user_id", ASCENDING)],
        name="partition",
    )
]


async def up(ctx: MigrationContext) -> None:
    await ctx.db[CONSOLIDATED].create_indexes(INDEXES)
