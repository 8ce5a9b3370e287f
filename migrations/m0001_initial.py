"""Collections, indexes and unique keys of the first schema, plus Atlas search indexes."""

from __future__ import annotations

from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.errors import OperationFailure, PyMongoError
from pymongo.operations import SearchIndexModel

from integrations.mongo.migrator import MigrationContext
from integrations.mongo.search_indexes import (
    TEXT_INDEX,
    VECTOR_INDEX,
    text_index_definition,
    vector_index_definition,
)
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
    if not ctx.atlas_search:
        ctx.note(
            "search indexes skipped: this server has no Atlas Search; "
            "Alfred scores vectors and keywords in the application"
        )
        return
    await _ensure_search_indexes(ctx)


async def _ensure_search_indexes(ctx: MigrationContext) -> None:
    facts = ctx.db[c.FACTS]
    cursor = await facts.list_search_indexes()
    present = {doc["name"]: doc async for doc in cursor}
    wanted = [
        SearchIndexModel(
            definition=vector_index_definition(ctx.embedding_dims),
            name=VECTOR_INDEX,
            type="vectorSearch",
        ),
        SearchIndexModel(definition=text_index_definition(), name=TEXT_INDEX, type="search"),
    ]
    for model in wanted:
        name = model.document["name"]
        try:
            if name in present:
                await facts.update_search_index(name, model.document["definition"])
                ctx.note(f"search index {name} updated")
            else:
                await facts.create_search_index(model)
                ctx.note(f"search index {name} created")
        except PyMongoError as exc:
            ctx.note(f"search index {name} could not be created: {exc}")
