"""Reads made on every reply are served from an index on the embedded server, which
plans one only from a filter's plain equalities: a plan check catches a query shape that
would scan a growing collection.

* A viewer's unformed messages (the recent leg's read, alone or in a reply turn's memory
  snapshot), for every kind of viewer, and inside a turn exactly what it returns alone.
  The journal only grows; a DM of someone in a circle sees several partitions, and the
  privacy filter's ``$or`` made the server scan every journaled message for it (390 ms a
  DM reply at 20,000 messages).
* A person's active circles (the turn's directory read): ``archived_at: None`` beside
  the member in one ``$match`` made the server scan every circle.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.directory import MongoDirectory
from integrations.mongo.journal import MongoJournal
from integrations.mongo.turn_memo import reply_turn
from integrations.mongo.turn_reads import active_circles_of, unformed_visible_pipeline
from memory.constants import CIRCLES, MESSAGES
from memory.models import Message, Partition, Role, Viewer
from memory.privacy import is_visible
from tests.helpers.world import dm, group, viewer

START = datetime(2026, 2, 2, 8, 0, tzinfo=UTC)
PARTITIONS = [
    Partition.dm("ann"),
    Partition.dm("bob"),
    Partition.circle("fam"),
    Partition.member("fam", "ann"),
    Partition.member("fam", "bob"),
    Partition.circle("work"),
    Partition.member("work", "ann"),
]
VIEWERS = [
    viewer("ann", dm("ann"), ["fam", "work"]),
    viewer("ann", group("fam"), ["fam", "work"]),
    viewer("bob", dm("bob"), ["fam"]),
    viewer("bob", group("fam"), ["fam"]),
    viewer("ann", group("work"), ["fam", "work"]),
    viewer("eve", dm("eve"), []),
]


@pytest.fixture
async def journal(migrated_db: AsyncDatabase[dict[str, Any]]) -> MongoJournal:
    """Mostly formed messages, in every partition, with a few unformed and handled."""
    journal = MongoJournal(migrated_db)
    for i in range(140):
        partition = PARTITIONS[i % len(PARTITIONS)]
        await journal.append(
            Message(
                id=f"m{i:03d}",
                thread_id=f"t{i % 3}",
                partition=partition,
                role=Role.USER if i % 4 else Role.AGENT,
                user_id=partition.owner_user_id,
                text=f"line {i}",
                created_at=START + timedelta(minutes=i),
                formed=i % 5 != 0,
                handled=i % 35 == 5,
            )
        )
    return journal


@pytest.mark.parametrize("who", VIEWERS, ids=lambda v: f"{v.user_id}-{v.thread.id}")
async def test_the_unformed_read_uses_an_index(
    journal: MongoJournal, migrated_db: AsyncDatabase[dict[str, Any]], who: Viewer
) -> None:
    plan = await migrated_db.command(
        "explain",
        {"aggregate": MESSAGES, "pipeline": unformed_visible_pipeline(who, 20), "cursor": {}},
    )
    assert "COLLSCAN" not in str(plan), f"the journal is scanned for {who}"
    assert "IXSCAN" in str(plan)


@pytest.mark.parametrize("who", VIEWERS, ids=lambda v: f"{v.user_id}-{v.thread.id}")
async def test_alone_and_in_a_turn_it_returns_exactly_the_visible_unformed(
    journal: MongoJournal, migrated_db: AsyncDatabase[dict[str, Any]], who: Viewer
) -> None:
    expected = [
        d["_id"]
        async for d in migrated_db[MESSAGES]
        .find({"formed": False, "role": Role.USER.value, "handled": {"$ne": True}})
        .sort([("created_at", -1), ("_id", -1)])
    ]
    alone = await journal.unformed_visible(who, limit=20)
    with reply_turn():
        in_turn = await journal.unformed_visible(who, limit=20)
    allowed = [i for i in expected if is_visible(_partition_of(i), who)][:20]
    assert [m.id for m in alone] == allowed
    assert [m.id for m in in_turn] == allowed
    assert all(is_visible(m.partition, who) for m in alone + in_turn)


def _partition_of(message_id: str) -> Partition:
    return PARTITIONS[int(message_id[1:]) % len(PARTITIONS)]


async def test_the_active_circles_read_uses_the_member_index(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    directory = MongoDirectory(migrated_db)
    kept, archived, other = [
        await directory.upsert_circle(-100 - n, title, START) for n, title in enumerate("abc")
    ]
    for circle in (kept, archived):
        await directory.add_member(circle.id, "ann")
    await directory.add_member(other.id, "bob")
    await directory.archive_circle(archived.id, START)
    plan = await migrated_db.command(
        "explain", {"aggregate": CIRCLES, "pipeline": active_circles_of("ann"), "cursor": {}}
    )
    assert "COLLSCAN" not in str(plan) and "IXSCAN" in str(plan)
    assert [c.id for c in await directory.circles_of("ann")] == [kept.id]
    with reply_turn():
        assert [c.id for c in await directory.circles_of("ann")] == [kept.id]
