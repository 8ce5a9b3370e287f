"""Collections, indexes and unique keys of the first schema.

The Atlas search indexes (``facts_vector``, ``facts_text``) are not made here: the
migrator reconciles them after every run (see :mod:`integrations.mongo.migrator`),
because their definition follows the configured embedder, which can change without a
new migration, and a creation that failed must be retried by the next run.
"""

from __future__ import annotations

from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.errors import OperationFailure

from integrations.mongo.migrator import MigrationContext
from memory import constants as c

VERSION = 1
NAME = "initial collections, indexes and search indexes"

PARTITION = [("visibility", ASCENDING), ("circle_id", ASCENDING), ("owner_user_id", ASCENDING)]

INDEXES: dict[str, list[IndexModel]] = {
    c.USERS: [
        IndexModel(
            [("telegram_user_id", ASCENDING)],
            unique=True,
            partialFilterExpression={"telegram_user_id": {"$exists": True}},
            name="telegram_user_id_unique",
        ),
    ],
    c.CIRCLES: [
        IndexModel(
            [("telegram_chat_id", ASCENDING)],
            unique=True,
            partialFilterExpression={"telegram_chat_id": {"$exists": True}},
            name="telegram_chat_id_unique",
        ),
        IndexModel([("member_ids", ASCENDING)], name="members"),
    ],
    c.THREADS: [
        IndexModel([("kind", ASCENDING), ("circle_id", ASCENDING)], name="by_circle"),
        IndexModel([("kind", ASCENDING), ("user_id", ASCENDING)], name="by_user"),
    ],
    c.MESSAGES: [
        IndexModel([("thread_id", ASCENDING), ("created_at", ASCENDING)], name="thread_time"),
        IndexModel([("thread_id", ASCENDING), ("formed", ASCENDING)], name="thread_formed"),
        IndexModel([*PARTITION, ("created_at", DESCENDING)], name="partition_time"),
        IndexModel([("user_id", ASCENDING)], name="by_user"),
    ],
    c.FACTS: [
        IndexModel([*PARTITION, ("current", ASCENDING)], name="partition_current"),
        IndexModel([("pkey", ASCENDING), ("current", ASCENDING)], name="pkey_current"),
        IndexModel(
            [*PARTITION, ("hash", ASCENDING)],
            unique=True,
            partialFilterExpression={"current": True},
            name="hash_per_partition_unique",
        ),
        IndexModel([("mem0_id", ASCENDING)], sparse=True, name="mem0_id"),
        IndexModel([("embedding_model", ASCENDING)], name="embedding_model"),
        IndexModel([("owner_user_id", ASCENDING)], name="by_owner"),
    ],
    c.REFLECTIONS: [
        IndexModel([*PARTITION, ("scope", ASCENDING), ("absorbed", ASCENDING)], name="partition"),
        IndexModel([("session_id", ASCENDING)], sparse=True, name="by_session"),
    ],
    c.CONSOLIDATED: [
        IndexModel(
            [("scope", ASCENDING), *PARTITION, ("session_id", ASCENDING)],
            unique=True,
            name="one_per_scope_partition",
        ),
    ],
    c.PARTITIONS: [IndexModel(PARTITION, name="partition")],
    c.CLARIFICATIONS: [
        IndexModel([("user_id", ASCENDING), ("status", ASCENDING)], name="by_user_status"),
        IndexModel(PARTITION, name="partition"),
    ],
}


async def up(ctx: MigrationContext) -> None:
    existing = set(await ctx.db.list_collection_names())
    for name in (*INDEXES, c.SCHEMA_MIGRATIONS):
        if name not in existing:
            try:
                await ctx.db.create_collection(name)
            except OperationFailure as exc:  # created meanwhile by a concurrent writer
                if exc.code != 48:  # NamespaceExists
                    raise
    for name, models in INDEXES.items():
        await ctx.db[name].create_indexes(models)
