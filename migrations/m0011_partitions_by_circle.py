"""An index of the partition records by circle, for the reply's memory read.

Every reply reads the version records of the partitions its viewer may see. A DM's are
fetched by ``_id``; a group's are every shared partition of its circle, whoever owns
them (members past and present), so they are fetched by circle. The embedded server
serves a ``$lookup`` from an index only when its ``foreignField`` leads one; the
partition index (visibility, circle, owner) does not, and without this index each
reply read every partition record of the deployment.
"""

from __future__ import annotations

from pymongo import ASCENDING, IndexModel

from integrations.mongo.migrator import MigrationContext
from memory.constants import PARTITIONS

VERSION = 11
NAME = "partition records by circle (the reply's memory read)"

INDEXES = [IndexModel([("circle_id", ASCENDING)], name="by_circle")]


async def up(ctx: MigrationContext) -> None:
    await ctx.db[PARTITIONS].create_indexes(INDEXES)
