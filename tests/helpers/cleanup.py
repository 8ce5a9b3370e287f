"""Dropping a test's database at the end of a module that also has synchronous tests."""

from __future__ import annotations

from typing import Any

from pymongo.asynchronous.mongo_client import AsyncMongoClient
from pymongo.errors import AutoReconnect


async def drop_after_a_pause(client: AsyncMongoClient[Any], name: str) -> None:
    """Drop database ``name``, once more if the first try is cut off by a reconnect.

    A synchronous test holds the session's event loop still for as long as it runs (a
    CLI test can take half a minute). The client's server monitor has a check waiting
    on the loop meanwhile; when the loop runs again that check has timed out, and the
    monitor resets the pool, cancelling what is in flight on it. A drop started at that
    moment fails with a reconnect error; the second try runs on the fresh pool.
    """
    try:
        await client.drop_database(name)
    except AutoReconnect:
        await client.drop_database(name)
