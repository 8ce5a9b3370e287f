"""Services for a test: the session's embedded servers, a database of the test's own."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

from memory.clock import ManualClock
from migrations import MigrationContext, migrate
from runtime.bundle import Services
from runtime.container import build_services
from runtime.settings import Settings
from tests.helpers.cleanup import drop_test_database
from tests.helpers.fakes import HashEmbedder


@asynccontextmanager
async def migrated_services(
    settings: Settings, name: str, now: datetime
) -> AsyncIterator[Services]:
    """Services on a fresh, migrated database ``<name>_<random>`` with a manual clock at
    ``now`` and the 64-dimension hash embedder; the database is dropped afterwards."""
    world = settings.model_copy(update={"mongodb_database": f"{name}_{uuid.uuid4().hex[:10]}"})
    services = await build_services(world, clock=ManualClock(now), embedder=HashEmbedder())
    try:
        await migrate(MigrationContext(services.mongo.db, False, 64, log=lambda _: None))
        yield services
    finally:
        await drop_test_database(services.mongo.client, world.mongodb_database)
        await services.aclose()
