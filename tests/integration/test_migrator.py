"""The migrator on the real embedded database: the lease that keeps two runs apart (renewed
while a long migration runs, taken over from a crashed holder, waited for with a clear
end) and the search-index step that every run ends with."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.migrator import LOCK_ID, NO_ATLAS_SEARCH, Migration, MigrationContext
from memory.constants import SCHEMA_MIGRATIONS
from memory.errors import Unavailable
from migrations import migrate, status
from tests.helpers.polling import eventually

Db = AsyncDatabase[dict[str, Any]]
#: A lease this short expires several times during one slow migration unless renewed.
# Short enough to see renewals within seconds; long enough that a loaded machine (a
# database round trip of a few hundred ms) never lets a live holder's lease lapse.
SHORT = timedelta(milliseconds=1500)


class SlowMigration:
    """A migration that runs until the test lets it finish, counting its runs."""

    def __init__(self) -> None:
        self.runs = 0
        self.started = asyncio.Event()
        self.finish = asyncio.Event()

    async def up(self, ctx: MigrationContext) -> None:
        self.runs += 1
        self.started.set()
        await self.finish.wait()

    @property
    def migration(self) -> Migration:
        return Migration(version=1, name="slow", up=self.up)


def context(db: Db, lines: list[str] | None = None) -> MigrationContext:
    sink = lines if lines is not None else []
    return MigrationContext(db=db, atlas_search=False, embedding_dims=64, log=sink.append)


async def lock_doc(db: Db) -> dict[str, Any] | None:
    return await db[SCHEMA_MIGRATIONS].find_one({"_id": LOCK_ID})


async def test_a_long_migration_keeps_the_lock_and_a_second_run_waits(db: Db) -> None:
    slow = SlowMigration()
    first = asyncio.create_task(
        migrate(context(db), lock_ttl=SHORT, available=[slow.migration], wait_seconds=30)
    )
    await asyncio.wait_for(slow.started.wait(), 20)
    taken = await lock_doc(db)
    assert taken is not None
    second = asyncio.create_task(
        migrate(context(db), lock_ttl=SHORT, available=[slow.migration], wait_seconds=30)
    )

    # Wait (without finishing the migration) until the first lease would have expired
    # twice over: only renewals keep the lock document alive that long.
    async def renewed_well_past_the_first_lease() -> bool:
        doc = await lock_doc(db)
        assert doc is not None and doc["token"] == taken["token"], "the lock changed hands"
        expires = doc["expires_at"].replace(tzinfo=UTC)
        return expires > taken["expires_at"].replace(tzinfo=UTC) + 2 * SHORT

    await eventually(renewed_well_past_the_first_lease, "the lease renewed", within=20, every=0.02)
    assert slow.runs == 1, "the second run did not start the migration meanwhile"
    assert not second.done()

    slow.finish.set()
    assert [m.version for m in await asyncio.wait_for(first, 20)] == [1]
    assert await asyncio.wait_for(second, 20) == [], "the second run found nothing left"
    assert slow.runs == 1
    assert await lock_doc(db) is None, "the lock is let go at the end"
    assert 1 in (await status(db, [slow.migration])).applied


async def test_a_crashed_holders_lock_is_taken_over_once_expired(db: Db) -> None:
    await db[SCHEMA_MIGRATIONS].insert_one(
        {
            "_id": LOCK_ID,
            "owner": "dead-host:1",
            "token": "crashed",
            "expires_at": datetime.now(UTC) + SHORT,
        }
    )
    slow = SlowMigration()
    slow.finish.set()
    applied = await migrate(
        context(db), lock_ttl=SHORT, available=[slow.migration], wait_seconds=30
    )
    assert [m.version for m in applied] == [1] and slow.runs == 1
    assert await lock_doc(db) is None


async def test_a_waiter_gives_up_with_a_message_naming_the_holder(db: Db) -> None:
    await db[SCHEMA_MIGRATIONS].insert_one(
        {
            "_id": LOCK_ID,
            "owner": "busy-host:42",
            "token": "alive",
            "expires_at": datetime.now(UTC) + timedelta(hours=1),
        }
    )
    slow = SlowMigration()
    with pytest.raises(Unavailable) as raised:
        await migrate(context(db), available=[slow.migration], wait_seconds=0.3)
    assert raised.value.one_line() == (
        "database: another migration (busy-host:42) still holds the migration lock after "
        "0.3 s (wait for it to finish and run the command again)"
    )
    assert slow.runs == 0
    held = await lock_doc(db)
    assert held is not None and held["token"] == "alive", "the holder's lock is untouched"


async def test_every_run_ends_with_the_search_index_step(db: Db) -> None:
    lines: list[str] = []
    await migrate(context(db, lines))
    assert lines.count(NO_ATLAS_SEARCH) == 1
    lines.clear()
    assert await migrate(context(db, lines)) == []
    assert lines == [NO_ATLAS_SEARCH], "said again on a run with nothing to apply"

    # A server that is said to have Atlas Search but refuses the listing (the embedded
    # one does): the step reports it and the run still succeeds; the next run retries.
    atlas = MigrationContext(db=db, atlas_search=True, embedding_dims=64, log=lines.append)
    lines.clear()
    assert await migrate(atlas) == []
    assert len(lines) == 1
    assert lines[0].startswith("search indexes could not be listed (")
    assert lines[0].endswith("the next `alfred migrate` tries again")
