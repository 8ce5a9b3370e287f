"""Applying the versioned migrations in ``migrations/`` to the database.

Each migration is a module ``migrations/mNNNN_name.py`` with ``VERSION``, ``NAME`` and
``async def up(ctx)``; it must be idempotent, because a crash between applying it and
recording it means it runs again. Applied versions are recorded in
``schema_migrations``. A lease document in the same collection keeps two runs from
migrating at once: the second waits for the first and then finds nothing left to do.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import pkgutil
import socket
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

import migrations as migrations_package
from memory.constants import SCHEMA_MIGRATIONS
from memory.errors import ConfigurationError, Unavailable
from memory.ports import Clock, Embedder

LOCK_ID = "migration-lock"
LOCK_TTL = timedelta(minutes=10)


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


def discover() -> list[Migration]:
    """Every migration module in the ``migrations`` package, in version order."""
    found: list[Migration] = []
    for info in pkgutil.iter_modules(migrations_package.__path__):
        if not info.name.startswith("m") or not info.name[1:5].isdigit():
            continue
        module: ModuleType = importlib.import_module(f"migrations.{info.name}")
        found.append(Migration(version=module.VERSION, name=module.NAME, up=module.up))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise ConfigurationError(f"two migrations share a version: {versions}")
    return found


async def status(db: AsyncDatabase[dict[str, Any]]) -> MigrationStatus:
    """The available migrations and the applied ones."""
    applied: dict[int, datetime] = {}
    async for doc in db[SCHEMA_MIGRATIONS].find({"version": {"$exists": True}}):
        applied[int(doc["version"])] = doc["applied_at"]
    return MigrationStatus(available=discover(), applied=applied)


async def _take_lock(db: AsyncDatabase[dict[str, Any]], wait_seconds: float) -> str:
    owner = f"{socket.gethostname()}:{os.getpid()}"
    deadline = asyncio.get_running_loop().time() + wait_seconds
    coll = db[SCHEMA_MIGRATIONS]
    while True:
        now = datetime.now(UTC)
        # An expired lock (its holder died) is taken over.
        await coll.delete_one({"_id": LOCK_ID, "expires_at": {"$lt": now}})
        try:
            await coll.insert_one({"_id": LOCK_ID, "owner": owner, "expires_at": now + LOCK_TTL})
            return owner
        except DuplicateKeyError:
            if asyncio.get_running_loop().time() > deadline:
                raise Unavailable(
                    "database",
                    "another `alfred migrate` holds the migration lock",
                    hint="wait for it to finish and run the command again",
                ) from None
            await asyncio.sleep(0.2)


async def migrate(
    ctx: MigrationContext, *, to: int | None = None, wait_seconds: float = 120.0
) -> list[Migration]:
    """Apply pending migrations up to ``to`` (all when None); return those applied."""
    owner = await _take_lock(ctx.db, wait_seconds)
    try:
        st = await status(ctx.db)
        target = to if to is not None else max((m.version for m in st.available), default=0)
        if to is not None and to not in {m.version for m in st.available} and to != 0:
            raise ConfigurationError(f"there is no migration {to}")
        done: list[Migration] = []
        for migration in st.pending:
            if migration.version > target:
                break
            ctx.log(f"applying {migration.version:04d} {migration.name}")
            await migration.up(ctx)
            await ctx.db[SCHEMA_MIGRATIONS].update_one(
                {"_id": f"v{migration.version:04d}"},
                {
                    "$set": {
                        "version": migration.version,
                        "name": migration.name,
                        "applied_at": datetime.now(UTC),
                        "applied_by": owner,
                    }
                },
                upsert=True,
            )
            done.append(migration)
        return done
    finally:
        await ctx.db[SCHEMA_MIGRATIONS].delete_one({"_id": LOCK_ID, "owner": owner})
