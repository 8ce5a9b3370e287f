"""A test's database through a client of the test's own, with command listeners: what a
read sent (its pipeline or filter) is asserted on, or explained again."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pymongo import AsyncMongoClient, monitoring
from pymongo.asynchronous.database import AsyncDatabase


class Reads(monitoring.CommandListener):
    """The ``aggregate`` commands sent (collection, pipeline) and the ``find`` commands
    (collection, their filter as a one-stage pipeline)."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, list[dict[str, Any]]]] = []
        self.finds: list[tuple[Any, list[dict[str, Any]]]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name == "aggregate":
            self.sent.append((event.command["aggregate"], list(event.command["pipeline"])))
        if event.command_name == "find":
            match = {"$match": dict(event.command.get("filter", {}))}
            self.finds.append((event.command["find"], [match]))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        """Only what was asked matters."""

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        """Only what was asked matters."""


@asynccontextmanager
async def own_client(
    db: AsyncDatabase[dict[str, Any]], *listeners: monitoring.CommandListener
) -> AsyncIterator[AsyncDatabase[dict[str, Any]]]:
    """``db`` through a new client to the same server that reports to ``listeners``."""
    address = await db.client.address
    assert address is not None, "the test's client is connected"
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        host=address[0], port=address[1], tz_aware=True, event_listeners=list(listeners)
    )
    try:
        yield client[db.name]
    finally:
        await client.close()
