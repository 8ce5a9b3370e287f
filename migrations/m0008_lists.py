"""Shared lists: the ``lists`` collection's indexes.

A list is found by its partition and key (unique, so two people creating "the shopping
list" at once get one list), read through the privacy filter's fields, and a forget
finds a person's items on circle lists by ``items.added_by``.
"""

from __future__ import annotations

from pymongo import ASCENDING, DESCENDING, IndexModel

from integrations.mongo.lists import LISTS
from integrations.mongo.migrator import MigrationContext

VERSION = 8
NAME = "shared lists"

INDEXES = [
    IndexModel(
        [
            ("visibility", ASCENDING),
            ("circle_id", ASCENDING),
            ("owner_user_id", ASCENDING),
            ("key", ASCENDING),
        ],
        unique=True,
        name="list_by_partition_and_key",
    ),
    IndexModel([("thread_id", ASCENDING), ("used_at", DESCENDING)], name="lists_by_thread"),
    IndexModel([("items.added_by", ASCENDING)], name="list_items_by_person"),
]


async def up(ctx: MigrationContext) -> None:
    await ctx.db[LISTS].create_indexes(INDEXES)
