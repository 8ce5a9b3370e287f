"""One reply reads each circle and each user once (services.reply.lookups), on the real database.

A reply names people in three places (the memory block, the people in the chat, the
recent history); the directory reads behind them are counted here, through the real
reply path, so a step that goes back to the database for the same circle or users again
fails the test.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime
from typing import Any

import pytest

from integrations.mongo.directory import MongoDirectory
from memory.models import Circle, User
from runtime.bundle import Services
from runtime.container import build_assistant
from runtime.settings import Settings
from services.messages import Incoming, Sender
from services.reply.lookups import TurnLookups
from tests.helpers.services import migrated_services

NOW = datetime(2026, 4, 1, 9, tzinfo=UTC)
FAM = -100200
ANN, BEN, GONE = 7001, 7002, 7003


class CountingDirectory(MongoDirectory):
    """The real directory, counting the reads a reply may repeat."""

    def __init__(self, inner: MongoDirectory) -> None:
        super().__init__(inner._circles.database)
        self.reads: Counter[str] = Counter()

    async def circle(self, circle_id: str) -> Circle | None:
        self.reads[f"circle {circle_id}"] += 1
        return await super().circle(circle_id)

    async def users(self, user_ids: list[str]) -> dict[str, User]:
        self.reads["users"] += 1
        return await super().users(user_ids)

    async def user(self, user_id: str) -> User | None:
        self.reads["users"] += 1
        return await super().user(user_id)


@pytest.fixture
async def s(settings: Settings) -> AsyncIterator[Services]:
    async with migrated_services(settings, "turn", NOW) as services:
        services.directory = CountingDirectory(services.directory)
        yield services


def said(who: int, name: str, text: str, n: int, *, addressed: bool = False) -> Incoming:
    return Incoming(
        chat_id=FAM,
        chat_type="group",
        sender=Sender(telegram_id=who, name=name),
        message_id=n,
        text=text,
        chat_title="Fam",
        addressed=addressed,
    )


async def test_a_reply_reads_each_circle_and_the_users_once(s: Services) -> None:
    directory = s.directory
    assert isinstance(directory, CountingDirectory)
    assistant = build_assistant(s)
    lines = [
        (ANN, "Ann", "@alfred remember that our anniversary is on 12 June"),
        (BEN, "Ben", "we should book the restaurant soon"),
        (GONE, "Gus", "I'll be away that week"),
    ]
    for n, (who, name, text) in enumerate(lines, start=1):
        await assistant.handle(said(who, name, text, n, addressed=text.startswith("@")))
    # Gus has left the circle: his line is still in the history, named
    await directory.remove_member(str(FAM), str(GONE))

    directory.reads.clear()
    turn = await assistant.handle(
        said(BEN, "Ben", "@alfred when is our anniversary?", 9, addressed=True)
    )
    assert turn.replies and "12 June" in turn.replies[0].text
    assert directory.reads[f"circle {FAM}"] == 1, directory.reads
    # one read for the circle's members, one for the history's author who is no member
    assert directory.reads["users"] == 2, directory.reads


async def test_lookups_read_once_and_leave_unknown_ids_out(s: Services) -> None:
    d = s.directory
    assert isinstance(d, CountingDirectory)
    circle = await d.upsert_circle(FAM, "Fam", NOW)
    for uid, name in ((ANN, "Ann"), (BEN, "Ben")):
        await d.upsert_user(uid, name, None, NOW)
        await d.add_member(circle.id, str(uid))
    d.reads.clear()
    lookups = TurnLookups(d)

    def ids(*values: Any) -> Iterable[str]:
        return [str(v) for v in values]

    members = await lookups.members(circle.id)
    assert [u.name for u in members] == ["Ann", "Ben"]
    assert set(await lookups.users(ids(ANN, BEN, 999))) == {str(ANN), str(BEN)}
    assert await lookups.users(ids(999)) == {}
    assert await lookups.circle("-1") is None and await lookups.circle("-1") is None
    assert d.reads == Counter({f"circle {circle.id}": 1, "users": 2, "circle -1": 1})
