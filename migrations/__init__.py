"""Versioned database migrations, applied in order by ``alfred migrate``.

Each module ``mNNNN_name.py`` defines ``VERSION``, ``NAME`` and ``async def up(ctx)``
(see :mod:`integrations.mongo.migrator`). Every ``up`` is idempotent.

The migrator is an adapter: it is handed the migrations to apply and never imports
this package. :func:`migrate` and :func:`status` here are the migrator's own, with the
list this package holds (:func:`discover`) as the default, for the entry points.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo import migrator
from integrations.mongo.migrator import (
    LOCK_TTL,
    LOCK_WAIT_SECONDS,
    Migration,
    MigrationContext,
    MigrationStatus,
)
from memory.errors import ConfigurationError

__all__ = ["Migration", "MigrationContext", "MigrationStatus", "discover", "migrate", "status"]


def discover() -> list[Migration]:
    """Every migration module of this package, in version order."""
    found: list[Migration] = []
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("m") or not info.name[1:5].isdigit():
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found.append(Migration(version=module.VERSION, name=module.NAME, up=module.up))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise ConfigurationError(f"two migrations share a version: {versions}")
    return found


async def status(
    db: AsyncDatabase[dict[str, Any]], available: Sequence[Migration] | None = None
) -> MigrationStatus:
    """The available migrations (``available``, or this package's) and the applied ones."""
    return await migrator.status(db, discover() if available is None else available)


async def migrate(
    ctx: MigrationContext,
    *,
    to: int | None = None,
    wait_seconds: float = LOCK_WAIT_SECONDS,
    lock_ttl: timedelta = LOCK_TTL,
    available: Sequence[Migration] | None = None,
) -> list[Migration]:
    """Apply pending migrations up to ``to`` (all when None); return those applied.

    ``available`` replaces this package's migrations (tests). See
    :func:`integrations.mongo.migrator.migrate`.
    """
    return await migrator.migrate(
        ctx,
        available=discover() if available is None else available,
        to=to,
        wait_seconds=wait_seconds,
        lock_ttl=lock_ttl,
    )
