"""The reply path's round trips, and what its per-turn reads may never hide.

One answered message used to send 17 commands to MongoDB; the reply turn now shares its
reads (integrations/mongo/turn_memo.py). The count is taken by a real PyMongo command
listener on the real embedded server. The other tests check that sharing never serves
something stale: a write made during the turn is seen by the turn's next read, and a
membership change, a forget or a new time zone is seen by the next message.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo import AsyncMongoClient, monitoring

from integrations.mongo.access_log import BatchedAccess
from integrations.mongo.directory import MongoDirectory
from integrations.mongo.recall_log import MongoRecallLog
from integrations.mongo.time_zones import MongoTimeZones
from integrations.mongo.turn_memo import reply_turn
from integrations.mongo.turn_reads import HISTORY_PREFETCH
from memory.clock import ManualClock
from memory.constants import FACTS
from memory.models import Message, Role, Thread, ThreadKind
from runtime.bundle import Services
from runtime.container import build_assistant
from runtime.jobs import formation_trigger
from runtime.settings import Settings
from services.membership import REGISTRATION_TTL_S
from services.messages import Incoming, Sender
from tests.helpers.services import migrated_services

NOW = datetime(2026, 5, 4, 8, tzinfo=UTC)
HOME = -100300
TESS, OMAR = 8101, 8102


class Commands(monitoring.CommandListener):
    """Every command the process's clients start while ``on``."""

    def __init__(self) -> None:
        self.on = False
        self.seen: Counter[str] = Counter()
        #: "start …" and "end …" of each command, in the order the client saw them.
        self.order: list[str] = []
        #: The commands started, whole, in that order.
        self.bodies: list[dict[str, Any]] = []
        self._names: dict[int, str] = {}

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if self.on:
            name = f"{event.command_name} {event.command.get(event.command_name)}"
            self.seen[name] += 1
            self.order.append(f"start {name}")
            self.bodies.append(dict(event.command))
            self._names[event.request_id] = name

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        """Starts are counted; ends only ordered."""
        name = self._names.pop(event.request_id, None)
        if self.on and name is not None:
            self.order.append(f"end {name}")

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        """Starts are counted."""


COMMANDS = Commands()
monitoring.register(COMMANDS)  # reaches the clients made after it: every test's


@pytest.fixture
async def s(settings: Settings) -> AsyncIterator[Services]:
    async with migrated_services(settings, "lean", NOW) as services:
        yield services


def group(who: int, name: str, text: str, n: int) -> Incoming:
    return Incoming(
        chat_id=HOME,
        chat_type="group",
        sender=Sender(telegram_id=who, name=name),
        message_id=n,
        text=text,
        chat_title="Home",
        addressed=text.startswith("@alfred"),
    )


def dm(who: int, name: str, text: str, n: int) -> Incoming:
    return Incoming(
        chat_id=who,
        chat_type="private",
        sender=Sender(telegram_id=who, name=name),
        message_id=n,
        text=text,
    )


async def test_an_answered_message_costs_at_most_eight_round_trips(s: Services) -> None:
    trigger = formation_trigger(s, None)
    assistant = build_assistant(s, after_message=lambda t: trigger.after_message(t))  # type: ignore[arg-type, return-value]
    await assistant.handle(
        group(TESS, "Tess", "@alfred remember that the boiler service is on 9 May", 1)
    )
    await assistant.handle(group(OMAR, "Omar", "I'll be home that morning", 2))
    await assistant.handle(group(OMAR, "Omar", "@alfred what's new?", 3))  # warm: the index
    COMMANDS.seen.clear()
    COMMANDS.on = True
    try:
        turn = await assistant.handle(group(OMAR, "Omar", "@alfred when is the boiler service?", 4))
        await s.retriever.drain()
    finally:
        COMMANDS.on = False
    assert turn.replies and "9 May" in turn.replies[0].text, turn.replies
    # Before: 13 finds and 4 writes. Now: the directory read, the touch, the message,
    # the memory read, the reply (the recall counts wait for their batch).
    assert sum(COMMANDS.seen.values()) <= 8, COMMANDS.seen
    assert not any(c.startswith("find ") for c in COMMANDS.seen), COMMANDS.seen


async def test_the_message_is_journaled_with_the_threads_update_not_after_it(
    s: Services,
) -> None:
    assistant = build_assistant(s)
    await assistant.handle(group(TESS, "Tess", "the plumber comes on Tuesday", 1))
    COMMANDS.order.clear()
    COMMANDS.on = True
    try:
        await assistant.handle(group(OMAR, "Omar", "I'll let him in", 2))
    finally:
        COMMANDS.on = False
    order = COMMANDS.order
    insert = order.index("start insert messages")  # the message (the reply's comes later)
    touch = max(i for i, c in enumerate(order[:insert]) if c == "start update threads")
    touched = order.index("end update threads", touch)
    assert touched > insert, f"the insert waited for the update: {order}"
    (stored,) = [m for m in await s.journal.recent(str(HOME), limit=5) if m.id.endswith(":2")]
    thread = await s.mongo.db["threads"].find_one({"_id": str(HOME)})
    assert thread is not None and stored.session_id == thread["session_id"]


async def test_the_history_window_holds_the_replies_times_too(s: Services) -> None:
    """Alfred's replies' times reach the thread's known times with the next message
    (``integrations.mongo.thread_times``, wired by the composition root), so the history
    read's window holds the messages it returns and no more, and they are the newest."""
    assistant = build_assistant(s)
    for n in range(1, 10):
        s.clock.advance(timedelta(seconds=40))
        turn = await assistant.handle(dm(TESS, "Tess", f"what should I cook on day {n}?", n))
        assert turn.replies, n
    thread = await s.mongo.db["threads"].find_one({"_id": str(TESS)})
    assert thread is not None
    known = thread["recent_at"]
    messages = [d async for d in s.mongo.db["messages"].find({"thread_id": str(TESS)})]
    replies = {d["created_at"] for d in messages if d["role"] == Role.AGENT.value}
    assert len(known) == HISTORY_PREFETCH and len(replies & set(known)) >= 6, known
    # The window's messages and the last reply, whose time the next message brings.
    window = [d for d in messages if d["created_at"] >= min(known)]
    assert len(window) == HISTORY_PREFETCH + 1, [d["_id"] for d in window]
    newest = sorted(messages, key=lambda d: d["created_at"])[-HISTORY_PREFETCH - 1 :]
    assert {d["_id"] for d in window} == {d["_id"] for d in newest}


async def test_a_failed_journal_write_fails_the_touch_after_both_ended(s: Services) -> None:
    thread = await s.directory.dm_thread("u-ada", 8103, NOW)

    async def journal(_tick: object) -> None:
        raise ConnectionResetError("the insert failed")

    with pytest.raises(ConnectionResetError):
        await s.directory.touch(thread.id, NOW, 5, alongside=journal)
    assert await s.directory.pending(thread.id) == (1, 5), "the update was not cut off"


async def test_a_write_inside_a_turn_is_seen_by_the_turns_next_read(s: Services) -> None:
    d = s.directory
    circle = await d.upsert_circle(HOME, "Home", NOW)
    for uid, name in ((TESS, "Tess"), (OMAR, "Omar")):
        await d.upsert_user(uid, name, None, NOW)
        await d.add_member(circle.id, str(uid))
    thread = Thread(id=circle.id, kind=ThreadKind.GROUP, circle_id=circle.id)
    zones = s.time_zones.store
    with reply_turn():
        viewer = await d.viewer(str(OMAR), thread)
        assert circle.id in viewer.circle_ids
        assert [u.name for u in await d.members(circle.id)] == ["Tess", "Omar"]
        assert await zones.user_zone(str(OMAR)) is None
        recent = await s.journal.recent(thread.id, limit=5)
        assert await s.notes.pending_clarification(viewer) is None  # the memory read
        assert recent == []

        await d.remove_member(circle.id, str(OMAR))
        await zones.set_user_zone(str(OMAR), "Asia/Tokyo")
        await s.journal.append(
            Message(
                id=f"{HOME}:1",
                thread_id=thread.id,
                partition=thread.partition_for(str(OMAR)),
                role=Role.USER,
                user_id=str(OMAR),
                text="hello",
                created_at=NOW,
            )
        )

        assert circle.id not in (await d.viewer(str(OMAR), thread)).circle_ids
        assert [u.name for u in await d.members(circle.id)] == ["Tess"]
        assert await zones.user_zone(str(OMAR)) == "Asia/Tokyo"
        assert [m.text for m in await s.journal.recent(thread.id, limit=5)] == ["hello"]


async def test_a_leave_a_forget_and_a_time_zone_are_seen_by_the_next_message(
    s: Services,
) -> None:
    clock = s.clock
    assert isinstance(clock, ManualClock)
    assistant = build_assistant(s)
    n = iter(range(1, 100))

    async def say(inc_for: object, who: int, name: str, text: str) -> str:
        make = group if inc_for == "group" else dm
        turn = await assistant.handle(make(who, name, text, next(n)))
        return " ".join(r.text for r in turn.replies)

    await say("group", TESS, "Tess", "@alfred remember that our spare key is under the blue pot")
    await say("group", OMAR, "Omar", "thanks, noted")
    assert "blue pot" in await say("dm", OMAR, "Omar", "where is our spare key?")

    # Omar leaves the group, seen by another replica (its own client: nothing of this
    # process hears the write); the next day his DM no longer shows the circle's memories.
    host, port = await s.mongo.client.address or ("localhost", 27017)
    other: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(host, port, tz_aware=True)
    try:
        other_db = other[s.settings.mongodb_database]
        await MongoDirectory(other_db).remove_member(str(HOME), str(OMAR))
        clock.advance(timedelta(days=1))
        assert "blue pot" not in await say("dm", OMAR, "Omar", "where is our spare key?")
        # and a time zone set there is the next answer here
        await MongoTimeZones(other_db).set_user_zone(str(OMAR), "America/Lima")
        assert "America/Lima" in await say("dm", OMAR, "Omar", "what's my time zone?")
    finally:
        await other.close()

    await say("dm", TESS, "Tess", "remember that my locker code is 4512")
    assert "4512" in await say("dm", TESS, "Tess", "what is my locker code?")
    await say("dm", TESS, "Tess", "forget my locker code")
    assert "4512" not in await say("dm", TESS, "Tess", "what is my locker code?")

    await say("dm", TESS, "Tess", "my time zone is Asia/Tokyo")
    assert "Asia/Tokyo" in await say("dm", TESS, "Tess", "what's my time zone?")
    clock.advance(timedelta(days=2))
    await say("dm", TESS, "Tess", "my time zone is Europe/Lisbon")
    assert "Europe/Lisbon" in await say("dm", TESS, "Tess", "what's my time zone?")


async def test_an_expired_registration_costs_nothing_unless_the_chat_changed(
    s: Services,
) -> None:
    """After REGISTRATION_TTL_S a message used to register its sender again: five
    commands, all writes that changed nothing. Now the turn's directory read tells
    whether anything changed; what another replica changed meanwhile (a username, the
    circle's title) is still written back by the next message."""
    clock = s.clock
    assert isinstance(clock, ManualClock)
    assistant = build_assistant(s)
    n = iter(range(1, 100))
    registering = ("findAndModify users", "findAndModify circles", "update circles")

    async def said(inc: Incoming) -> Counter[str]:
        COMMANDS.seen.clear()
        COMMANDS.on = True
        try:
            await assistant.handle(inc)
        finally:
            COMMANDS.on = False
        return Counter({k: v for k, v in COMMANDS.seen.items() if k.startswith(registering)})

    tess = Sender(telegram_id=TESS, name="Tess", username="tess")

    def in_group(text: str) -> Incoming:
        return Incoming(
            chat_id=HOME,
            chat_type="group",
            sender=tess,
            message_id=next(n),
            text=text,
            chat_title="Home",
        )

    assert await said(in_group("the plumber comes on Tuesday")), "the first message registers"
    clock.advance(timedelta(seconds=REGISTRATION_TTL_S + 60))
    assert not await said(in_group("and the painter on Friday"))
    in_dm = Incoming(chat_id=TESS, chat_type="private", sender=tess, message_id=1, text="hi")
    assert await said(in_dm), "a new chat registers"
    clock.advance(timedelta(seconds=REGISTRATION_TTL_S + 60))
    assert not await said(replace(in_dm, message_id=2, text="hello again"))

    host, port = await s.mongo.client.address or ("localhost", 27017)
    other: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(host, port, tz_aware=True)
    try:
        other_db = other[s.settings.mongodb_database]
        await other_db["users"].update_one({"_id": str(TESS)}, {"$set": {"username": "old"}})
        await other_db["circles"].update_one({"_id": str(HOME)}, {"$set": {"title": "Hoem"}})
    finally:
        await other.close()
    clock.advance(timedelta(seconds=REGISTRATION_TTL_S + 60))
    assert await said(in_group("the roofer on Monday")), "a changed chat registers again"
    tess_doc = await s.directory.user(str(TESS))
    assert tess_doc is not None and tess_doc.username == "tess"
    home = await s.directory.circle(str(HOME))
    assert home is not None and home.title == "Home" and str(TESS) in home.member_ids


async def test_recall_counts_wait_for_their_batch_and_none_is_lost(s: Services) -> None:
    facts = s.mongo.db[FACTS]
    await facts.insert_many([{"_id": f"f{i}", "access_count": 0} for i in (1, 2, 3)])
    recalls = MongoRecallLog(s.mongo.db)
    access = BatchedAccess(recalls, flush_after_s=60, flush_at_facts=3)
    later = NOW + timedelta(minutes=5)

    async def counts() -> dict[str, tuple[int, object]]:
        return {
            d["_id"]: (d["access_count"], d.get("last_accessed_at")) async for d in facts.find({})
        }

    await access.record(["f1", "f2"], NOW)
    await access.record(["f1"], later)
    assert access.writes == 0 and await recalls.waiting() == 0  # waiting in the process
    await access.record(["f3"], NOW)  # the third fact waiting: one write for all
    assert access.writes == 1 and await recalls.waiting() == 1
    assert (await counts())["f1"] == (0, None), "logged, not yet added to the fact"
    assert await recalls.fold() == 3
    assert await counts() == {"f1": (2, later), "f2": (1, NOW), "f3": (1, NOW)}
    await access.record(["f2"], later)
    await access.aclose()  # shutdown logs what waits
    assert access.writes == 2 and await recalls.fold() == 1
    assert (await counts())["f2"] == (2, later) and await recalls.waiting() == 0
