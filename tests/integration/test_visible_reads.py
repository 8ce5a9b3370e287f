"""The reads of notes, summaries, questions, lists, facts ("what do you remember", the
status count), messages (a forget's look back) and reminders (listing, cancel, move,
export) under the privacy filter are served
from an index on the embedded server, and return exactly what the filter selects, in
the order and number asked for.

The server plans an index only from a filter that is a plain prefix of one (equalities,
then one operator); the privacy filter of a DM viewer in a circle is an ``$or``, and
joined to a read's own conditions with ``$and`` it made the server scan the whole
collection, every note of every household, each time a session's first reply built its
always-in-context block. Each read now opens with an arm of
``memory.privacy.visibility_arms`` (or the person's questions by user and status) and
applies the exact filter after it. Checked here: how many documents the server examined
for every read sent (no more than the viewer's own partitions and their circles' hold),
for viewers in every kind of thread, and each result against the plain query it
replaces, on a world that also holds records of a shape no partition has (a DM's note
filed under a circle), which an arm lets through and the exact filter must drop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.facts import MongoFactStore
from integrations.mongo.journal import MongoJournal
from integrations.mongo.lists import LISTS, MongoListStore
from integrations.mongo.notes import MongoNotes
from integrations.mongo.reminders import REMINDERS, MongoReminders
from memory.constants import CLARIFICATIONS, CONSOLIDATED, FACTS, MESSAGES, REFLECTIONS
from memory.ids import content_hash
from memory.lists import SharedList
from memory.models import (
    Clarification,
    Consolidated,
    Fact,
    Message,
    Partition,
    Reflection,
    ReflectionScope,
    Role,
    Viewer,
    Visibility,
)
from memory.privacy import and_visible, is_visible, visibility_arms, visibility_filter
from memory.reminders import Reminder, ReminderState
from tests.helpers.watched_db import Reads, own_client
from tests.helpers.world import dm, group, viewer

START = datetime(2026, 5, 4, 8, tzinfo=UTC)
#: The message that cancelled a reminder in every partition (see the reminders' read).
CANCELLING = "-100:7"
SESSION = "s-now"
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
    viewer("bob", group("work"), ["fam"]),
    viewer("eve", dm("eve"), []),
    viewer("eve", dm("ann"), ["fam"]),
]
#: A DM's artefact filed under a circle: no write of Alfred's makes one.
STRAY = {"visibility": "dm", "circle_id": "fam", "owner_user_id": "ann"}


async def _fill(db: AsyncDatabase[dict[str, Any]]) -> None:
    notes, lists = MongoNotes(db), MongoListStore(db)
    facts, journal = MongoFactStore(db), MongoJournal(db)
    at = START
    for n, p in enumerate(PARTITIONS):
        for scope in ReflectionScope:
            for session in (SESSION, "s-old") if scope is ReflectionScope.SESSION else (None,):
                for absorbed in (False, True):
                    at += timedelta(minutes=1)
                    await notes.add_reflection(
                        Reflection(
                            id=f"r{n}-{scope}-{session}-{absorbed}",
                            content=f"note {n}",
                            scope=scope,
                            partition=p,
                            session_id=session,
                            absorbed=absorbed,
                            created_at=at,
                        )
                    )
                await notes.save_blob(
                    Consolidated(
                        id=f"b{n}-{scope}-{session}",
                        scope=scope,
                        partition=p,
                        session_id=session,
                        content=f"summary {n}",
                        word_limit=50,
                        last_consolidated_at=at,
                    )
                )
        for user in ("ann", "bob", "eve"):
            for status in ("pending", "asked", "resolved"):
                at += timedelta(minutes=1)
                await notes.add_clarification(
                    Clarification(
                        id=f"q{n}-{user}-{status}",
                        user_id=user,
                        partition=p,
                        question=f"which {n}?",
                        status=status,
                        created_at=at,
                    )
                )
        for k in range(3):
            at += timedelta(minutes=1)
            content = f"fact {k} of {n}"
            await facts.add(
                Fact(
                    id=f"f{n}-{k}",
                    content=content,
                    hash=content_hash(content),
                    partition=p,
                    valid_at=at,
                    created_at=at if k else START,  # ties in time, ordered by id
                    updated_at=at,
                )
            )
            await journal.append(
                Message(
                    id=f"m{n}-{k}",
                    thread_id=f"t{n}",
                    partition=p,
                    role=Role.USER,
                    user_id=p.owner_user_id,
                    text=content,
                    created_at=at,
                )
            )
        await facts.invalidate(f"f{n}-2", at=at)
        for k, state in enumerate(ReminderState):
            due = START + timedelta(days=1, hours=k % 3)  # ties in time, ordered by id
            await MongoReminders(db).insert(
                Reminder(
                    id=f"rem{n}-{state}",
                    text=f"reminder {k} of {n}",
                    partition=p,
                    creator_id=p.owner_user_id or "ann",
                    for_user_id=p.owner_user_id,
                    thread_id=f"t{n}",
                    chat_id=n,
                    start=due,
                    next_due=due,
                    state=state,
                    created_at=at,
                    # one message id in every partition: only the filter bounds its replay
                    cancelled_by=CANCELLING if state is ReminderState.CANCELLED else None,
                )
            )
        at += timedelta(minutes=1)
        await lists.create(
            SharedList(
                id=f"l{n}",
                key=f"shopping-{n}",
                title="shopping",
                partition=p,
                thread_id=f"t{n}",
                created_at=at,
                used_at=at,
            )
        )
    for coll, extra in (
        (REFLECTIONS, {"scope": "user", "absorbed": False, "content": "stray", "created_at": at}),
        (CONSOLIDATED, {"scope": "user", "session_id": None, "content": "stray"}),
        (CLARIFICATIONS, {"user_id": "ann", "status": "pending", "created_at": START}),
        (LISTS, {"key": "stray", "title": "stray", "thread_id": "t", "used_at": at}),
        (FACTS, {"content": "stray", "current": True, "created_at": at}),
        (MESSAGES, {"text": "stray", "role": "user", "created_at": at}),
        (REMINDERS, {"text": "stray", "state": "scheduled", "next_due": START}),
    ):
        await db[coll].insert_one({"_id": f"stray-{coll}", **STRAY, **extra})


@pytest.fixture
async def watched(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> AsyncIterator[tuple[AsyncDatabase[dict[str, Any]], Reads]]:
    await _fill(migrated_db)
    aggregates = Reads()
    async with own_client(migrated_db, aggregates) as db:
        yield db, aggregates


def _scopes(session_id: str | None) -> dict[str, Any]:
    scopes: list[dict[str, Any]] = [{"scope": {"$in": ["circle", "user"]}}]
    if session_id:
        scopes.append({"scope": "session", "session_id": session_id})
    return {"$or": scopes}


async def _ids(db: AsyncDatabase[dict[str, Any]], coll: str, query: dict[str, Any]) -> list[str]:
    return sorted([str(d["_id"]) async for d in db[coll].find(query)])


async def test_each_read_returns_exactly_what_the_filter_selects(
    watched: tuple[AsyncDatabase[dict[str, Any]], Reads],
) -> None:
    db, _ = watched
    notes, lists = MongoNotes(db), MongoListStore(db)
    facts, journal = MongoFactStore(db), MongoJournal(db)
    shown = 0
    for who in VIEWERS:
        for session in (SESSION, None):
            query = and_visible(who, {"absorbed": False, **_scopes(session)})
            got = await notes.visible_reflections(who, session_id=session)
            assert sorted(r.id for r in got) == await _ids(db, REFLECTIONS, query), who
            assert [r.created_at for r in got] == sorted(r.created_at for r in got)
            blobs = await notes.visible_blobs(who, session_id=session)
            query = and_visible(who, _scopes(session))
            assert sorted(b.id for b in blobs) == await _ids(db, CONSOLIDATED, query), who
            shown += len(got) + len(blobs)
            assert all(is_visible(x.partition, who) for x in [*got, *blobs])
        for status, method, first in (
            ("pending", notes.pending_clarification, 1),
            ("asked", notes.asked_clarification, -1),
        ):
            query = and_visible(who, {"user_id": who.user_id, "status": status})
            expected = await db[CLARIFICATIONS].find_one(query, sort=[("created_at", first)])
            found = await method(who)
            assert (found.id if found else None) == (expected["_id"] if expected else None), who
        every_note, every_blob = await notes.all_visible(who)
        assert sorted(r.id for r in every_note) == await _ids(
            db, REFLECTIONS, visibility_filter(who)
        )
        assert sorted(b.id for b in every_blob) == await _ids(
            db, CONSOLIDATED, visibility_filter(who)
        )
        expected_lists = [
            str(d["_id"])
            async for d in db[LISTS]
            .find(visibility_filter(who))
            .sort([("used_at", -1), ("used_seq", -1)])
        ]
        assert [x.id for x in await lists.visible(who)] == expected_lists, who
        for list_id in [*expected_lists, "l1", "stray-lists"]:
            got_list = await lists.get(list_id, who)
            assert (got_list.id if got_list else None) == (
                list_id if list_id in expected_lists else None
            ), (who, list_id)
        for history in (False, True):
            query = visibility_filter(who) if history else and_visible(who, {"current": True})
            newest = [
                str(d["_id"])
                async for d in db[FACTS].find(query).sort([("created_at", -1), ("_id", 1)])
            ]
            for limit in (0, 2):
                got_facts = await facts.list_visible(who, include_history=history, limit=limit)
                assert [f.id for f in got_facts] == (newest[:limit] if limit else newest), who
        assert await facts.count_visible(who) == await db[FACTS].count_documents(
            and_visible(who, {"current": True})
        )
        said = [
            str(d["_id"])
            async for d in db[MESSAGES]
            .find(visibility_filter(who))
            .sort([("created_at", -1), ("_id", 1)])
        ]
        assert [m.id for m in await journal.visible(who, limit=4)] == said[:4], who
        active = {"state": {"$in": ["scheduled", "sending", "sent"]}}
        due = [
            str(d["_id"])
            async for d in db[REMINDERS]
            .find(and_visible(who, active))
            .sort([("next_due", 1), ("_id", 1)])
        ]
        reminders = await MongoReminders(db).visible(who)
        assert [r.id for r in reminders] == due, who
        assert all(is_visible(r.partition, who) for r in reminders)
        # a cancel's replay also sees what its message cancelled, and only here
        cancelled = {"state": "cancelled", "cancelled_by": CANCELLING}
        due_or_cancelled = [
            str(d["_id"])
            async for d in db[REMINDERS]
            .find(and_visible(who, {"$or": [active, cancelled]}))
            .sort([("next_due", 1), ("_id", 1)])
        ]
        replayed = await MongoReminders(db).visible(who, cancelled_by=CANCELLING)
        assert [r.id for r in replayed] == due_or_cancelled, who
        assert all(is_visible(r.partition, who) for r in replayed)
        shown_cancelled = [r for r in replayed if r.state is ReminderState.CANCELLED]
        assert bool(shown_cancelled) == bool(reminders), who  # one per partition it sees
        assert all(
            is_visible(x.partition, who)
            for x in [*every_note, *every_blob, *await lists.visible(who)]
        )
    assert shown > 0


async def test_each_read_examines_only_the_viewers_circles(
    watched: tuple[AsyncDatabase[dict[str, Any]], Reads],
) -> None:
    db, aggregates = watched
    notes, lists = MongoNotes(db), MongoListStore(db)
    facts, journal = MongoFactStore(db), MongoJournal(db)
    examined: dict[str, int] = {}
    for who in VIEWERS:
        aggregates.sent.clear()
        await notes.visible_reflections(who, session_id=SESSION)
        await notes.visible_blobs(who, session_id=SESSION)
        await notes.pending_clarification(who)
        await notes.asked_clarification(who)
        await notes.all_visible(who)
        await lists.visible(who)
        await lists.get("l3", who)
        await facts.list_visible(who, limit=2)
        await facts.count_visible(who)
        await journal.visible(who, limit=4)
        await MongoReminders(db).visible(who)
        assert aggregates.sent, who
        for coll, pipeline in list(aggregates.sent):
            by_id = "_id" in pipeline[0]["$match"]  # a list by id: that one document
            bound = 1 if by_id else await _reachable(db, coll, who)
            plan = await db.command(
                "explain",
                {"aggregate": coll, "pipeline": pipeline, "cursor": {}},
                verbosity="executionStats",
            )
            docs = plan["executionStats"]["totalDocsExamined"]
            assert "COLLSCAN" not in str(plan), (coll, pipeline[0])
            assert docs <= bound, (who, coll, pipeline[0], docs, bound)
            examined[coll] = examined.get(coll, 0) + docs
    assert set(examined) == {
        REFLECTIONS,
        CONSOLIDATED,
        CLARIFICATIONS,
        LISTS,
        FACTS,
        MESSAGES,
        REMINDERS,
    }
    assert all(n > 0 for n in examined.values()), examined


async def _reachable(db: AsyncDatabase[dict[str, Any]], coll: str, who: Viewer) -> int:
    """The documents in the viewer's own DM partition and their circles' partitions (and
    the strays filed there), or for questions the person's own: what a read for them may
    have to look at."""
    if coll == CLARIFICATIONS:
        return await db[coll].count_documents({"user_id": who.user_id})
    circles = sorted(who.circle_ids | ({who.thread.circle_id} - {None}))
    own = {"visibility": "dm", "circle_id": None, "owner_user_id": who.user_id}
    return await db[coll].count_documents({"$or": [own, {"circle_id": {"$in": circles}}]})


def test_the_arms_reach_no_further_than_the_viewers_circles() -> None:
    """The arms hold every partition the viewer may see, and besides only their circles'
    other shared partitions, which the filter after them drops."""
    members = ["ann", "bob", "eve", None]
    everything = [Partition.dm(u) for u in members if u] + [
        Partition(visibility=Visibility.SHARED, circle_id=c, owner_user_id=u)
        for c in ("fam", "work", "else")
        for u in members
    ]
    wider = 0
    for who in VIEWERS:
        arms = visibility_arms(who)
        for arm in arms:  # plain: equalities, at most one $in
            assert not any(k.startswith("$") for k in arm), arm
            assert sum(isinstance(v, dict) for v in arm.values()) <= 1, arm
        for p in everything:
            fields = p.as_fields()
            inside = any(
                all(
                    fields.get(k) in v["$in"] if isinstance(v, dict) else fields.get(k) == v
                    for k, v in arm.items()
                )
                for arm in arms
            )
            if is_visible(p, who):
                assert inside, (who, p)
            elif inside:
                assert p.circle_id in who.circle_ids, (who, p)
                wider += 1
    assert wider > 0  # a DM of someone in a circle reads other members' shared ones too
