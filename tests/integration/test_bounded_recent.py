"""A thread's last messages read apart from the turn's memory snapshot ("forget that",
"pin that", whether someone spoke since Alfred asked them) are bounded in time, so a
thread of years costs what a new one does.

The embedded server fetches every message that matches a filter before it sorts and
limits, so ``{"thread_id": …}`` alone read the whole thread for ten messages. In a reply
turn the journal write leaves a time that the thread's newest messages are after
(``history_from``); a caller that knows one passes ``since``. Both checks here are on
what comes back (exactly the newest, as an unbounded read finds them) and on the plan of
the read that was sent (how many messages the server examined for it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo import monitoring
from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo import turn_memo
from integrations.mongo.codec import message_to_doc
from integrations.mongo.directory import MongoDirectory
from integrations.mongo.journal import MongoJournal
from integrations.mongo.turn_memo import WriteInvalidation, reply_turn
from integrations.mongo.turn_reads import HISTORY_PREFETCH, memory_snapshot
from memory.constants import MESSAGES, THREADS
from memory.models import Message, Partition, Role
from tests.helpers.watched_db import own_client
from tests.helpers.world import group, viewer

START = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
THREAD = group("fam").id
OLD_MESSAGES = 400
#: Turns journaled the way replies journal them (the thread's update and the message).
TURNS = HISTORY_PREFETCH + 5


class Finds(monitoring.CommandListener):
    """The ``find`` commands sent to the journal."""

    def __init__(self) -> None:
        self.filters: list[dict[str, Any]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name == "find" and event.command.get("find") == MESSAGES:
            self.filters.append(dict(event.command["filter"]))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        """Only what was asked matters."""

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        """Only what was asked matters."""


@pytest.fixture
async def watched(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> AsyncIterator[tuple[AsyncDatabase[dict[str, Any]], Finds]]:
    """The test's database through a client of its own that records the finds (and
    invalidates turn memos on writes, as Alfred's client does)."""
    finds = Finds()
    async with own_client(migrated_db, WriteInvalidation(), finds) as db:
        yield db, finds


def said(n: int, at: datetime, role: Role = Role.USER, thread: str = THREAD) -> Message:
    return Message(
        id=f"{thread}:{n}" if role is Role.USER else f"{thread}:a:{n}",
        thread_id=thread,
        partition=Partition.circle("fam"),
        role=role,
        user_id="ann" if role is Role.USER else None,
        text=f"line {n}",
        telegram_message_id=n if role is Role.USER else None,
        created_at=at,
    )


async def years_of_thread(db: AsyncDatabase[dict[str, Any]]) -> datetime:
    """Old messages in the thread (and another thread), then turns journaled as replies
    journal them; the time of the last turn."""
    old = [
        message_to_doc(said(n, START + timedelta(hours=n), Role.USER if n % 2 else Role.AGENT))
        for n in range(OLD_MESSAGES)
    ]
    old += [
        message_to_doc(said(n, START + timedelta(hours=n), thread="t:other")) for n in range(50)
    ]
    await db[MESSAGES].insert_many(old)
    await db[THREADS].insert_one({"_id": THREAD, "kind": "group", "circle_id": "fam"})
    directory, journal = MongoDirectory(db), MongoJournal(db)
    at = START + timedelta(hours=OLD_MESSAGES)
    for k in range(TURNS):
        at += timedelta(minutes=1)
        n = 1000 + k
        with reply_turn():

            async def journal_it(_: object, n: int = n, at: datetime = at) -> None:
                await journal.append(said(n, at))

            await directory.touch(THREAD, at, 5, alongside=journal_it)
            await journal.append(said(n, at + timedelta(seconds=5), Role.AGENT))
    return at


async def newest(db: AsyncDatabase[dict[str, Any]], limit: int, since: datetime) -> list[str]:
    """The newest ``limit`` of the thread at or after ``since``, oldest first, unbounded."""
    cursor = (
        db[MESSAGES]
        .find({"thread_id": THREAD, "created_at": {"$gte": since}})
        .sort([("created_at", -1), ("_id", -1)])
        .limit(limit)
    )
    return list(reversed([str(d["_id"]) async for d in cursor]))


async def examined(db: AsyncDatabase[dict[str, Any]], query: dict[str, Any]) -> int:
    plan = await db.command(
        "explain",
        {"find": MESSAGES, "filter": query, "sort": {"created_at": -1, "_id": -1}},
        verbosity="executionStats",
    )
    return int(plan["executionStats"]["totalDocsExamined"])


async def test_in_a_turn_the_last_messages_are_the_newest_and_read_in_a_window(
    watched: tuple[AsyncDatabase[dict[str, Any]], Finds],
) -> None:
    db, finds = watched
    last = await years_of_thread(db)
    directory, journal = MongoDirectory(db), MongoJournal(db)
    now = last + timedelta(minutes=1)
    with reply_turn():  # "forget that": the turn's journal write, then the last ten

        async def journal_it(_: object) -> None:
            await journal.append(said(2000, now))

        await directory.touch(THREAD, now, 5, alongside=journal_it)
        finds.filters.clear()
        got = await journal.recent(THREAD, limit=10)
    sent = list(finds.filters)
    assert [m.id for m in got] == await newest(db, 10, START)
    assert got[-1].id == f"{THREAD}:2000"
    assert [m.created_at for m in got] == sorted(m.created_at for m in got)
    # One read, and the server examined the window, not the thread's years.
    assert len(sent) == 1
    seen = await examined(db, sent[0])
    assert 10 <= seen <= 2 * HISTORY_PREFETCH + 1, seen
    assert await examined(db, {"thread_id": THREAD}) > OLD_MESSAGES  # what it was


async def test_since_bounds_the_read_and_what_it_returns(
    watched: tuple[AsyncDatabase[dict[str, Any]], Finds],
) -> None:
    db, finds = watched
    last = await years_of_thread(db)
    journal = MongoJournal(db)
    since = last - timedelta(minutes=3, seconds=30)
    finds.filters.clear()
    got = await journal.recent(THREAD, limit=50, since=since)  # outside any turn
    sent = list(finds.filters)
    assert [m.id for m in got] == await newest(db, 50, since)
    assert len(got) == 8  # the last four turns: each user message and the reply to it
    assert all(m.created_at >= since for m in got)
    assert len(sent) == 1
    assert await examined(db, sent[0]) == len(got)
    # In a turn whose memory snapshot holds the history, ``since`` still applies.
    with reply_turn():
        memo = turn_memo.current()
        assert memo is not None
        await memory_snapshot(db, memo, viewer("ann", group("fam"), ["fam"]))
        finds.filters.clear()
        history = await journal.recent(THREAD, limit=HISTORY_PREFETCH)
        bounded = await journal.recent(THREAD, limit=10, since=since)
        assert finds.filters == []  # both served by the snapshot
    assert [m.id for m in history] == await newest(db, HISTORY_PREFETCH, START)
    assert [m.id for m in bounded] == [m.id for m in got]


async def test_messages_of_one_instant_keep_the_order_they_were_journaled_in(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    """A replay's clock, and ``alfred chat``'s, stands still between its clock lines, so
    a conversation can share one ``created_at``. Its order is the order of the journal's
    writes, in every read: the last few, the turn's history and formation's batch (by id,
    "…:10" came before "…:9", and "forget that" found the wrong message)."""
    db = migrated_db
    await db[THREADS].insert_one({"_id": THREAD, "kind": "group", "circle_id": "fam"})
    journal = MongoJournal(db)
    for n in range(1, 13):
        await journal.append(said(n, START))
    in_order = [f"{THREAD}:{n}" for n in range(1, 13)]
    assert [m.id for m in await journal.recent(THREAD, limit=5)] == in_order[-5:]
    assert [m.id for m in await journal.unformed(THREAD)] == in_order
    with reply_turn():
        memo = turn_memo.current()
        assert memo is not None
        await memory_snapshot(db, memo, viewer("ann", group("fam"), ["fam"]))
        assert [m.id for m in await journal.recent(THREAD, limit=5)] == in_order[-5:]
