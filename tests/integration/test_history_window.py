"""The time window of a turn's history read holds the thread's newest messages, and
with Alfred's replies' times noted (:mod:`integrations.mongo.thread_times`) no more than
the read returns.

The history a reply is given must be exactly the thread's newest messages, whatever
happened since the last turn: a reply journaled by another process (whose time this one
never learns), a redelivered reply (stored before, at a time of its own), a reply in
several parts at one instant, a clock that stands still (a replay's), messages deleted
by a forget. Each turn here is checked against an unbounded read of the same thread.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo import turn_memo
from integrations.mongo.directory import MongoDirectory
from integrations.mongo.journal import MongoJournal
from integrations.mongo.thread_times import JournaledTimes, stored_time
from integrations.mongo.turn_memo import reply_turn
from integrations.mongo.turn_reads import (
    HISTORY_PREFETCH,
    history_window,
    memory_snapshot,
    messages_part,
)
from memory.constants import MESSAGES, THREADS
from memory.models import Message, Role
from tests.helpers.world import group, viewer
from tests.integration.test_bounded_recent import THREAD, said

START = datetime(2025, 3, 3, 9, 0, 0, 123456, tzinfo=UTC)
ANN = viewer("ann", group("fam"), ["fam"])


async def deployment(
    db: AsyncDatabase[dict[str, Any]],
) -> tuple[MongoDirectory, MongoJournal]:
    """The group's thread, and a directory and journal that share noted times."""
    await db[THREADS].insert_one({"_id": THREAD, "kind": "group", "circle_id": "fam"})
    times = JournaledTimes()
    return MongoDirectory(db, times), MongoJournal(db, times)


async def newest(db: AsyncDatabase[dict[str, Any]]) -> list[str]:
    """The thread's newest messages, newest first, read without any bound."""
    cursor = (
        db[MESSAGES]
        .find({"thread_id": THREAD})
        .sort([("created_at", -1), ("journaled_ns", -1), ("_id", -1)])
        .limit(HISTORY_PREFETCH)
    )
    return [str(d["_id"]) async for d in cursor]


async def user_turn(
    db: AsyncDatabase[dict[str, Any]],
    directory: MongoDirectory,
    journal: MongoJournal,
    n: int,
    at: datetime,
) -> tuple[list[str], int | None]:
    """A user message journaled as a reply turn journals it, then the turn's history: the
    ids it holds (newest first), and how many messages its window holds (None unbounded)."""
    with reply_turn():

        async def journal_it(_: object) -> None:
            await journal.append(said(n, at, Role.USER))

        await directory.touch(THREAD, at, 5, alongside=journal_it)
        memo = turn_memo.current()
        assert memo is not None
        bound = history_window(memo, THREAD)
        parts = await memory_snapshot(db, memo, ANN)
    history = [str(d["_id"]) for d in messages_part(parts[MESSAGES], "history")]
    if bound is None:
        return history, None
    return history, await db[MESSAGES].count_documents(
        {"thread_id": THREAD, "created_at": {"$gte": bound}}
    )


async def test_with_replies_noted_the_window_holds_what_the_read_returns(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    db = migrated_db
    directory, journal = await deployment(db)
    alone = MongoDirectory(db), MongoJournal(db)  # a deployment that notes nothing
    at = START
    for n in range(3 * HISTORY_PREFETCH):
        at += timedelta(seconds=30)
        history, held = await user_turn(db, directory, journal, n, at)
        assert history == await newest(db)
        if n > HISTORY_PREFETCH:  # every message answered, every reply's time known
            assert held == HISTORY_PREFETCH
        await journal.append(said(n, at + timedelta(microseconds=700), Role.AGENT))
    # The same conversation without the replies' times: correct, twice as wide.
    at += timedelta(seconds=30)
    for n in range(100, 100 + HISTORY_PREFETCH + 2):
        at += timedelta(seconds=30)
        history, held = await user_turn(db, *alone, n, at)
        assert history == await newest(db)
        await alone[1].append(said(n, at + timedelta(seconds=1), Role.AGENT))
    assert held is not None and held >= 2 * HISTORY_PREFETCH - 1


async def test_whatever_happens_between_turns_the_history_is_the_newest(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    db = migrated_db
    directory, journal = await deployment(db)
    elsewhere = MongoJournal(db)  # another process's journal: its replies are not noted
    rng = random.Random(17)
    at = START
    kept: list[Message] = []
    deleted_at: list[int] = []  # the turns after which a message was deleted
    checked = 0
    for n in range(160):
        if rng.random() < 0.7:  # a replay's clock stands still for a while
            at += timedelta(milliseconds=rng.choice([0, 1, 400, 60_000]))
        history, held = await user_turn(db, directory, journal, n, at)
        # A deleted message's time may still be among the thread's last known ones (as
        # a deleted user message's always could): until it leaves them (each turn adds
        # one), the history may be that much shorter, but it is the newest, in order.
        recent = sum(1 for k in deleted_at if k > n - HISTORY_PREFETCH)
        assert history == (await newest(db))[: len(history)], n
        assert len(history) >= min(HISTORY_PREFETCH, n + 1) - recent, n
        assert held is None or held >= len(history)
        checked += held is not None and not recent
        event = rng.random()
        if event < 0.45:  # answered here, in one part or several at one instant
            for part in range(rng.choice([1, 1, 2, 3])):
                reply = said(
                    n * 10 + part, at + timedelta(microseconds=rng.randrange(999)), Role.AGENT
                )
                assert await journal.append(reply)
                kept.append(reply)
        elif event < 0.6:  # answered by another process
            reply = said(n * 10, at + timedelta(milliseconds=3), Role.AGENT)
            assert await elsewhere.append(reply)
            kept.append(reply)
        elif event < 0.72 and kept:  # a redelivered reply: stored before, not noted again
            again = kept[-1].model_copy(update={"created_at": at + timedelta(minutes=5)})
            assert not await journal.append(again)
        elif event < 0.77 and kept:  # a forget deletes a reply
            gone = kept.pop(rng.randrange(len(kept)))
            assert await journal.delete_by_ids([gone.id]) == 1
            deleted_at.append(n)
        # else: nobody answered (the group talked among itself)
    assert checked > 40 and len(deleted_at) >= 3, (checked, deleted_at)


def test_a_noted_time_is_never_later_than_the_one_stored() -> None:
    at = datetime(2025, 3, 3, 9, 0, 0, 999999, tzinfo=UTC)
    assert stored_time(at) == datetime(2025, 3, 3, 9, 0, 0, 999000, tzinfo=UTC)
    times = JournaledTimes(max_threads=2)
    times.add("a", at)
    times.add("b", at - timedelta(seconds=1))
    times.add("b", at - timedelta(seconds=2))
    times.add("c", at)  # "a" waited longest: dropped (its next window is only wider)
    assert times.take("a") == []
    assert times.take("b") == [
        stored_time(at - timedelta(seconds=2)),
        stored_time(at - timedelta(seconds=1)),
    ]
    assert times.take("b") == []  # given once
    times.clear()
    assert times.take("c") == []
