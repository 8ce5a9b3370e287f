"""Pin the memories people asked Alfred to keep (seed 001: pinned memories do not decay).

Explicit memories and corrections are pinned when stored since this version; the ones
stored before it are pinned here, so a memory someone asked for does not start to fade
only because it is older than the upgrade. Every partition's version is bumped so that
cached search indexes reload the flag.
"""

from __future__ import annotations

from integrations.mongo.migrator import MigrationContext
from memory.constants import FACTS, PARTITIONS

VERSION = 5
NAME = "pin explicit memories and corrections"

ASKED_FOR = ["explicit", "correction"]


async def up(ctx: MigrationContext) -> None:
    result = await ctx.db[FACTS].update_many(
        {"provenance.source": {"$in": ASKED_FOR}, "pinned": {"$ne": True}},
        {"$set": {"pinned": True}, "$inc": {"rev": 1}},
    )
    if result.modified_count:
        await ctx.db[PARTITIONS].update_many({}, {"$inc": {"version": 1}})
        ctx.note(f"pinned {result.modified_count} memories people had asked Alfred to keep")
