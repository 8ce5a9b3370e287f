"""The recent-messages leg (DESIGN.md §6.6) obeys the privacy rule like every read path.

Unformed journal messages are searched on the reply path before formation has made
facts of them. This new read path must leak nothing: the journal query itself carries
the filter (checked here against the independent oracle on random worlds, without the
leg's second check), and end to end a DM line never reaches the group, another member's
DM or another circle, even when the query repeats it word for word.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from pymongo import AsyncMongoClient

from integrations.mongo.connection import MongoHandle
from integrations.mongo.journal import MongoJournal
from memory.models import Message, Role
from memory.search.recent import RecentLeg
from migrations import MigrationContext, migrate
from runtime.settings import Settings
from tests.helpers.cleanup import drop_test_database
from tests.helpers.fakes import HashEmbedder
from tests.helpers.privacy_world import World, oracle, worlds
from tests.helpers.replay import probe, probes, replay_lines, replies, say

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def test_the_journal_query_returns_exactly_the_visible_unformed_messages(
    mongo: MongoHandle,
) -> None:
    """Random worlds: every message in a random partition, some already formed or handled
    (never returned), the rest returned to exactly the viewers the oracle allows, by the
    database query alone; the leg on top returns the same set for a query matching all."""
    assert mongo.lease is not None, "the property test must run on the embedded server"
    url = mongo.lease.url
    counts = {"pairs": 0, "returned": 0}

    async def run(world: World) -> None:
        client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(url, tz_aware=True)
        name = f"privrecent_{uuid.uuid4().hex[:8]}"
        try:
            db = client[name]
            await migrate(MigrationContext(db, atlas_search=False, embedding_dims=64, log=print))
            journal = MongoJournal(db)
            searchable: dict[str, int] = {}
            for i, partition in enumerate(world.partitions):
                formed, handled = i % 5 == 3, i % 7 == 4
                message = Message(
                    id=f"m{i}",
                    thread_id="t",
                    partition=partition,
                    role=Role.USER,
                    user_id=partition.owner_user_id,
                    text=f"private line number {i}",
                    created_at=START + timedelta(seconds=i),
                    formed=formed,
                    handled=handled,
                )
                await journal.append(message)
                if not (formed or handled):
                    searchable[message.id] = i
            leg = RecentLeg(journal, HashEmbedder())
            for viewer in world.viewers():
                allowed = {
                    mid for mid, i in searchable.items() if oracle(world.partitions[i], viewer)
                }
                stored = await journal.unformed_visible(viewer, limit=1000)
                assert {m.id for m in stored} == allowed, f"the query leaked for {viewer}"
                hits = await leg.search(viewer, "private line number", START + timedelta(hours=1))
                assert {c.id for c, _, _ in hits} == allowed, f"the leg leaked for {viewer}"
                counts["pairs"] += 1
                counts["returned"] += len(allowed)
        finally:
            await drop_test_database(client, name)
            await client.close()

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(world=worlds)
    def check(world: World) -> None:
        asyncio.run(run(world))

    check()
    assert counts["pairs"] >= 30 * 25 and counts["returned"] > 0


async def test_said_minutes_ago_never_leaks_to_a_thread_where_it_is_not_visible(
    settings: Settings, tmp_path: Path
) -> None:
    """Queries repeating the lines word for word, minutes after they were said (nothing
    formed yet):
    a DM line stays out of the group and out of the other member's DM; a group line
    stays out of another circle and out of another member's DM; and the speaker's own
    DM finds both (so the probes did search the new leg)."""
    dm_line = "my locker combination is 7-1-9-4"
    group_line = "I keep the boat keys in the red tin"
    dm_query, group_query = f"is it true that {dm_line}?", f"is it true that {group_line}?"
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["rosa", "ivan"]},
            {"circle": "club", "members": ["rosa", "kemal"]},
            say("rosa", "dm:rosa", dm_line),
            say("rosa", "group:home", group_line),
            {"clock": "+3m"},
            probe("ivan", "group:home", dm_query),
            probe("rosa", "group:home", dm_query),
            probe("ivan", "dm:ivan", dm_query),
            probe("kemal", "group:club", group_query),
            probe("rosa", "group:club", group_query),
            probe("ivan", "dm:ivan", group_query),
            probe("kemal", "dm:kemal", group_query),
            say("ivan", "group:home", "@alfred what is the locker combination?"),
            say("kemal", "group:club", "@alfred where are the boat keys?"),
            probe("rosa", "dm:rosa", dm_query),
            probe("rosa", "dm:rosa", group_query),
        ],
        tmp_path / "leak",
    )
    seen = probes(out)
    for p in seen[:7]:
        assert p["retrieved"], p  # the search ran, and found nothing it must not show
        text = " ".join(m["content"] for m in p["memories"]) + p["context"]
        assert "locker" not in text and "boat keys" not in text, p
    for reply in replies(out):
        assert "7-1-9-4" not in reply["text"] and "red tin" not in reply["text"], reply
    own_dm, own_group_line = seen[7], seen[8]
    assert [m["content"] for m in own_dm["memories"]] == [dm_line]
    assert [m["content"] for m in own_group_line["memories"]] == [group_line]
