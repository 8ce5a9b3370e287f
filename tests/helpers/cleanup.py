"""Dropping a test's database at its end, even just after the event loop stood still."""

from __future__ import annotations

from typing import Any

from pymongo.asynchronous.mongo_client import AsyncMongoClient
from pymongo.errors import AutoReconnect


async def drop_test_database(client: AsyncMongoClient[Any], name: str) -> None:
    """Drop database ``name``, once more if the first try is cut off by a reconnect.

    The tests share one event loop, and it stands still between tests and while a
    synchronous test runs (a CLI test can take half a minute). The client's server
    monitor keeps a streamed ``hello`` waiting on that loop; when the loop runs again
    that wait has timed out, and the monitor resets the pool and closes the connections
    in use. Reads and writes are retried by the driver, but ``dropDatabase`` is not: a
    drop in flight at that moment fails with a reconnect error, and the second try runs
    on the fresh pool. Dropping twice is harmless.
    """
    try:
        await client.drop_database(name)
    except AutoReconnect:
        await client.drop_database(name)
