"""Two replicas, one new person: concurrent first messages must not race the directory.

Each replica is its own ``build_services`` (its own MongoDB client and directory) on the
same embedded database, as two bot processes would be. A new user's first message reaches
both at the same moment: both upsert the user (and the circle, or the DM thread), one
insert wins and the other must read it back, never fail or apologise.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from memory.clock import ManualClock
from memory.constants import CIRCLES, THREADS, USERS
from migrations import MigrationContext, migrate
from runtime.bundle import Services
from runtime.container import build_assistant, build_services
from runtime.settings import Settings
from services.messages import Incoming, Sender
from services.reply.assistant import MEMORY_DOWN
from tests.helpers.cleanup import drop_test_database
from tests.helpers.fakes import HashEmbedder

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
PEOPLE = 12  # new people per round: enough that some pairs of upserts collide
ROUNDS = 3


@pytest.fixture
async def replicas(settings: Settings) -> AsyncIterator[tuple[Services, Services]]:
    world = settings.model_copy(update={"mongodb_database": f"race_{uuid.uuid4().hex[:10]}"})
    one = await build_services(world, clock=ManualClock(NOW), embedder=HashEmbedder())
    two = await build_services(world, clock=ManualClock(NOW), embedder=HashEmbedder())
    try:
        await migrate(MigrationContext(one.mongo.db, False, 64, log=lambda _: None))
        yield one, two
    finally:
        await drop_test_database(one.mongo.client, world.mongodb_database)
        await one.aclose()
        await two.aclose()


def first_message(user_id: int, *, group_id: int | None, message_id: int) -> Incoming:
    return Incoming(
        chat_id=group_id if group_id is not None else user_id,
        chat_type="group" if group_id is not None else "private",
        sender=Sender(telegram_id=user_id, name=f"Person {user_id}"),
        message_id=message_id,
        text="@alfred hello, I'm new here",
        chat_title="New family" if group_id is not None else None,
        addressed=True,
    )


async def test_a_new_users_first_message_on_two_replicas_at_once(
    replicas: tuple[Services, Services],
) -> None:
    one, two = replicas
    bots = (build_assistant(one), build_assistant(two))
    users: list[int] = []
    groups: list[int] = []
    for round_no in range(ROUNDS):
        batch = [9_000_000 + round_no * 100 + i for i in range(PEOPLE)]
        users += batch
        messages: list[Incoming] = []
        for i, uid in enumerate(batch):
            # Half of them write in a new group (user, circle, group thread), half in a
            # new DM (user, DM thread); the same message reaches both replicas.
            group_id = -(8_000_000 + uid) if i % 2 else None
            if group_id is not None:
                groups.append(group_id)
            messages.append(first_message(uid, group_id=group_id, message_id=1))
        turns = await asyncio.gather(
            *(bot.handle(inc) for inc in messages for bot in bots), return_exceptions=True
        )
        failures = [t for t in turns if isinstance(t, BaseException)]
        assert failures == []
        replies = [r.text for t in turns if not isinstance(t, BaseException) for r in t.replies]
        assert MEMORY_DOWN not in replies

    db = one.mongo.db
    for uid in users:
        assert await db[USERS].count_documents({"telegram_user_id": uid}) == 1
    assert await db[USERS].count_documents({}) == len(users)
    for gid in groups:
        assert await db[CIRCLES].count_documents({"telegram_chat_id": gid}) == 1
        assert await db[THREADS].count_documents({"_id": str(gid)}) == 1
    dms = [str(u) for u in users if -(8_000_000 + u) not in groups]
    assert await db[THREADS].count_documents({"kind": "dm", "user_id": {"$in": dms}}) == len(dms)
    for gid in groups:  # each circle lists its member once
        circle = await one.directory.circle(str(gid))
        assert circle is not None
        assert len(circle.member_ids) == 1
