"""Archived circles are purged after the retention period; old raw messages dropped."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory.clock import ManualClock
from memory.models import Partition, Reflection, ReflectionScope
from migrations import MigrationContext, migrate
from runtime.container import build_services
from runtime.jobs import retention
from runtime.settings import Settings
from services.retention import apply_retention
from tests.helpers.fakes import HashEmbedder
from tests.helpers.journal import conversation

NOW = datetime(2026, 5, 1, tzinfo=UTC)


async def test_archived_circle_purged_after_retention(settings: Settings, data_dir: Path) -> None:
    world = settings.model_copy(update={"mongodb_database": f"ret_{uuid.uuid4().hex[:8]}"})
    clock = ManualClock(NOW - timedelta(days=40))
    s = await build_services(world, clock=clock, embedder=HashEmbedder())
    try:
        await migrate(MigrationContext(s.mongo.db, False, 64, log=lambda _: None))
        old = await s.directory.upsert_circle(-1, "Old", clock.now())
        kept = await s.directory.upsert_circle(-2, "Kept", clock.now())
        await s.directory.upsert_user(1, "Ann", None, clock.now())
        for circle in (old, kept):
            await s.directory.add_member(circle.id, "1")
            await s.writer.add(f"{circle.title} circle goes sailing", Partition.circle(circle.id))
            await s.notes.add_reflection(
                Reflection(
                    id=f"r{circle.id}",
                    content=f"{circle.title} plans a trip",
                    scope=ReflectionScope.CIRCLE,
                    partition=Partition.circle(circle.id),
                    created_at=clock.now(),
                )
            )
            thread = await s.directory.thread(circle.id)
            assert thread is not None
            for m in conversation(thread, [("1", f"hello {circle.title}")], clock.now()):
                await s.journal.append(m)
        own = await s.writer.add("Ann likes tea", Partition.dm("1"))
        await s.directory.archive_circle(old.id, clock.now())
        # not yet: archived 0 days ago
        report = await apply_retention(retention(s), clock.now())
        assert report.circles_purged == []
        clock.set(NOW)
        report = await apply_retention(retention(s), clock.now())
        assert report.circles_purged == [old.id]
        db = s.mongo.db
        for coll in ("memory_facts", "memory_reflections", "messages", "threads", "circles"):
            assert await db[coll].count_documents({"circle_id": old.id}) == 0, coll
        assert await db["circles"].count_documents({"_id": old.id}) == 0
        assert await db["memory_facts"].count_documents({"circle_id": kept.id}) == 1
        assert await s.facts.get(own[0].id) is not None, "DM memories are not the circle's"
        # running it again is harmless
        assert (await apply_retention(retention(s), clock.now())).circles_purged == []
    finally:
        await s.aclose()


async def test_formed_messages_dropped_after_window(settings: Settings) -> None:
    world = settings.model_copy(update={"mongodb_database": f"ret_{uuid.uuid4().hex[:8]}"})
    clock = ManualClock(NOW)
    s = await build_services(world, clock=clock, embedder=HashEmbedder())
    try:
        await migrate(MigrationContext(s.mongo.db, False, 64, log=lambda _: None))
        await s.directory.upsert_user(1, "Ann", None, NOW)
        thread = await s.directory.dm_thread("1", 1, NOW)
        messages = conversation(
            thread, [("1", "old one"), ("1", "new one"), ("1", "unformed")], NOW
        )
        for m in messages:
            await s.journal.append(m)
        await s.journal.mark_formed([messages[0].id], NOW - timedelta(days=45))
        await s.journal.mark_formed([messages[1].id], NOW - timedelta(days=2))
        report = await apply_retention(retention(s), NOW)
        assert report.messages_dropped == 1
        left = {m.text for m in await s.journal.all_for_audit()}
        assert left == {"new one", "unformed"}, "unformed messages are never dropped"
    finally:
        await s.aclose()
