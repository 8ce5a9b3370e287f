"""Applying versioned migrations to the database.

The caller hands over the migrations (``migrations.discover()`` lists the modules
``migrations/mNNNN_name.py``, each with ``VERSION``, ``NAME`` and ``async def up(ctx)``),
so this adapter never imports the package that imports it. Each must be idempotent,
because a crash between applying it and recording it means it runs again. Applied
versions are recorded in ``schema_migrations``. A lease document in the same
collection keeps two runs from migrating at once: the second waits for the first and
then finds nothing left to do.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError, PyMongoError

from integrations.mongo.search_indexes import reconcile_search_indexes
from integrations.mongo.upsert import upsert
from memory.constants import FACTS, SCHEMA_MIGRATIONS
from memory.errors import ConfigurationError, Unavailable
from memory.ports import Clock, Embedder
from memory.tasks import cancel_and_wait

log = logging.getLogger(__name__)

LOCK_ID = "migration-lock"
#: The lease's lifetime between two renewals: how long a crashed holder blocks others.
LOCK_TTL = timedelta(minutes=2)
#: How long a second run waits for the lock before giving up (with a message).
LOCK_WAIT_SECONDS = 120.0
#: What every run says on a server without Atlas Search (the embedded one, self-hosted).
NO_ATLAS_SEARCH = (
    "search indexes skipped: this server has no Atlas Search; "
    "Alfred scores vectors and keywords in the application"
)


@dataclass
class MigrationContext:
    """What a migration may use: the database and the facts about the deployment."""

    db: AsyncDatabase[dict[str, Any]]
    atlas_search: bool
    embedding_dims: int
    log: Callable[[str], None] = print
    notes: list[str] = field(default_factory=list)
    #: For data migrations that store facts (the legacy import embeds what it imports).
    embedder: Embedder | None = None
    clock: Clock | None = None
    legacy_dry_run: bool = False
    legacy_user_map: Mapping[str, str] | None = None
    legacy_agent_id: str | None = None

    def note(self, text: str) -> None:
        """Record something the operator should read in the migration report."""
        self.notes.append(text)
        self.log(text)


@dataclass(frozen=True)
class Migration:
    """One versioned migration module."""

    version: int
    name: str
    up: Callable[[MigrationContext], Awaitable[None]]


@dataclass
class MigrationStatus:
    """Which versions exist and which are applied."""

    available: list[Migration]
    applied: dict[int, datetime]

    @property
    def pending(self) -> list[Migration]:
        return [m for m in self.available if m.version not in self.applied]

    @property
    def current(self) -> int:
        return max(self.applied, default=0)


async def status(
    db: AsyncDatabase[dict[str, Any]], available: Sequence[Migration]
) -> MigrationStatus:
    """The ``available`` migrations and the applied ones."""
    applied: dict[int, datetime] = {}
    async for doc in db[SCHEMA_MIGRATIONS].find({"version": {"$exists": True}}):
        applied[int(doc["version"])] = doc["applied_at"]
    return MigrationStatus(available=list(available), applied=applied)


class MigrationLock:
    """The lease document that keeps two runs from migrating (or importing) at once.

    Taken by inserting ``{_id: LOCK_ID}`` (a second insert fails on the unique
    ``_id``); renewed by a heartbeat task every third of ``ttl`` while held, so a
    migration that runs longer than ``ttl`` (the legacy import, with its embedding
    calls) keeps it; let go at the end. A holder that died stops renewing, and its
    lease is taken over once it has expired. ``owner`` (host:pid) says who holds it;
    ``token`` tells this holder from another process with the same pid.
    """

    def __init__(
        self,
        db: AsyncDatabase[dict[str, Any]],
        *,
        ttl: timedelta = LOCK_TTL,
        wait_seconds: float = LOCK_WAIT_SECONDS,
    ) -> None:
        if ttl <= timedelta(0):
            raise ValueError("the lock's lifetime must be positive")
        self.coll = db[SCHEMA_MIGRATIONS]
        self.ttl = ttl
        self.wait_seconds = wait_seconds
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        self.token = uuid.uuid4().hex
        #: Set when a renewal found the lease gone (taken over after it expired).
        self.lost = asyncio.Event()
        self._heartbeat: asyncio.Task[None] | None = None

    async def __aenter__(self) -> MigrationLock:
        await self._take()
        self._heartbeat = asyncio.create_task(self._renew_forever(), name="migration-lock")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._heartbeat is not None:
            await cancel_and_wait(self._heartbeat)
        await self.coll.delete_one({"_id": LOCK_ID, "token": self.token})

    def check(self) -> None:
        """Raise when the lease was lost: another run may be migrating now."""
        if self.lost.is_set():
            raise Unavailable(
                "database",
                "the migration lock expired while this run held it and was taken by another",
                hint="run `alfred migrate` again once the other run has finished",
            )

    async def _take(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_seconds
        poll = min(0.2, self.ttl.total_seconds() / 4)
        while True:
            now = datetime.now(UTC)
            # An expired lock (its holder died) is taken over.
            await self.coll.delete_one({"_id": LOCK_ID, "expires_at": {"$lt": now}})
            try:
                await self.coll.insert_one(
                    {
                        "_id": LOCK_ID,
                        "owner": self.owner,
                        "token": self.token,
                        "expires_at": now + self.ttl,
                    }
                )
                return
            except DuplicateKeyError:
                if loop.time() >= deadline:
                    holder = await self.coll.find_one({"_id": LOCK_ID}) or {}
                    raise Unavailable(
                        "database",
                        f"another migration ({holder.get('owner', 'unknown')}) still holds "
                        f"the migration lock after {self.wait_seconds:g} s",
                        hint="wait for it to finish and run the command again",
                    ) from None
                await asyncio.sleep(poll)

    async def _renew_forever(self) -> None:
        every = self.ttl.total_seconds() / 3
        while True:
            await asyncio.sleep(every)
            try:
                renewed = await self.coll.update_one(
                    {"_id": LOCK_ID, "token": self.token},
                    {"$set": {"expires_at": datetime.now(UTC) + self.ttl}},
                )
            except PyMongoError as exc:  # a blip: the next beat tries again
                log.warning("renewing the migration lock failed (%s)", type(exc).__name__)
                continue
            if renewed.matched_count == 0:
                log.error("the migration lock was lost (it expired and was taken over)")
                self.lost.set()
                return


async def migrate(
    ctx: MigrationContext,
    *,
    available: Sequence[Migration],
    to: int | None = None,
    wait_seconds: float = LOCK_WAIT_SECONDS,
    lock_ttl: timedelta = LOCK_TTL,
) -> list[Migration]:
    """Apply pending migrations up to ``to`` (all when None); return those applied.

    Then, whatever was applied, reconcile the Atlas search indexes with the
    configuration (:func:`reconcile_search_indexes`), so running ``alfred migrate``
    again after an embedder change, or after an index creation failed, fixes them.
    ``available`` are the migrations to consider (``migrations.discover()``, or a
    test's own); ``lock_ttl`` is the lease's lifetime between two renewals.
    """
    async with MigrationLock(ctx.db, ttl=lock_ttl, wait_seconds=wait_seconds) as lock:
        st = await status(ctx.db, available)
        target = to if to is not None else max((m.version for m in st.available), default=0)
        if to is not None and to not in {m.version for m in st.available} and to != 0:
            raise ConfigurationError(f"there is no migration {to}")
        done: list[Migration] = []
        for migration in st.pending:
            if migration.version > target:
                break
            lock.check()
            ctx.log(f"applying {migration.version:04d} {migration.name}")
            await migration.up(ctx)
            lock.check()
            await upsert(
                ctx.db[SCHEMA_MIGRATIONS],
                {"_id": f"v{migration.version:04d}"},
                {
                    "$set": {
                        "version": migration.version,
                        "name": migration.name,
                        "applied_at": datetime.now(UTC),
                        "applied_by": lock.owner,
                    }
                },
            )
            done.append(migration)
        schema_exists = 1 in st.applied or any(m.version == 1 for m in done)
        await _reconcile_search_indexes(ctx, schema_exists)
        return done


async def _reconcile_search_indexes(ctx: MigrationContext, schema_exists: bool) -> None:
    """The search-index step of every run; its lines go to the report."""
    if not ctx.atlas_search:
        ctx.note(NO_ATLAS_SEARCH)
        return
    if not schema_exists:
        ctx.note("search indexes not checked: migration 0001 is not applied yet")
        return
    for line in await reconcile_search_indexes(ctx.db[FACTS], ctx.embedding_dims):
        ctx.note(line)
