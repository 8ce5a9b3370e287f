"""Connecting to MongoDB: the configured URI, or the embedded server Alfred starts.

The same code path serves Atlas, self-hosted MongoDB and the embedded server; only the
URI differs. Driver exceptions are translated here into :mod:`memory.errors`, so a wrong
URI or a server that is down becomes one line that says what to fix.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import ConfigurationError as PyMongoConfigurationError
from pymongo.errors import InvalidURI, OperationFailure, PyMongoError

from integrations.modes import Mode
from integrations.mongo.turn_memo import WriteInvalidation
from memory.errors import ConfigurationError, Unavailable

Document = dict[str, Any]

#: Every write Alfred makes waits until a majority of the replica set has it in its
#: on-disk journal (``w: "majority", j: true``).
#:
#: Why the client and not a few collections: the writes a person was told about are not
#: only the fact itself. "Got it, I'll remember that." also rests on the journal entry of
#: their message, the directory's new user and thread, the outbox row that makes the
#: reply exactly-once, and a correction or a forget touches facts, notes and summaries.
#: One setting at the connection covers all of them, and no adapter written later can
#: forget it. Why it costs little: MongoDB 5.0+ already defaults replica sets to
#: ``majority`` (journaled by ``writeConcernMajorityJournalDefault``), so on Atlas this
#: makes the default explicit and keeps it when a cluster's default is lowered (an
#: arbiter makes it ``w:1``); a standalone mongod acknowledges ``majority`` once the write
#: is journaled. The embedded server also fsyncs every commit (``--sync-on-commit``, see
#: :mod:`runtime.embedded.servers`), so there ``j`` adds nothing. It is fixed, not read
#: from the URI: a ``w=1`` there would quietly take back a promise made to the user.
WRITE_CONCERN: Final[dict[str, Any]] = {"w": "majority", "journal": True}

#: How long a pooled connection to the embedded server may sit unused before the driver
#: opens a fresh one instead. The server closes a connection idle for 5 minutes, and it
#: runs standalone, where the driver does not retry a write that meets a closed
#: connection: after a quiet spell, the first write would fail. Two minutes leaves room.
EMBEDDED_POOL_IDLE_MS: Final = 120_000


class Lease(Protocol):
    """A hold on an embedded server: let go of it and the server may stop."""

    @property
    def url(self) -> str: ...

    def release(self) -> None: ...


@dataclass
class MongoHandle:
    """An open connection: the client, Alfred's database, and the embedded lease if any."""

    client: AsyncMongoClient[Document]
    db: AsyncDatabase[Document]
    mode: Mode
    url_for_display: str
    lease: Lease | None = None
    _closed: bool = field(default=False, repr=False)

    async def close(self) -> None:
        """Close the client, then let go of the embedded server (it stops with its last user)."""
        if self._closed:
            return
        self._closed = True
        await self.client.close()
        if self.lease is not None:
            await asyncio.to_thread(self.lease.release)


def redact(uri: str) -> str:
    """The URI without credentials, safe for logs and error messages."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "<unparseable URI>"
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"


async def connect_mongo(
    uri: str,
    *,
    mode: Mode,
    database: str,
    timeout_ms: int,
    lease: Lease | None = None,
) -> MongoHandle:
    """Open Alfred's database and check that it answers; the handle owns ``lease``.

    Raises :class:`Unavailable` when the server cannot be reached in ``timeout_ms`` and
    :class:`ConfigurationError` for a malformed URI.
    """
    # PyMongo takes a bare word for a host name: "not-a-uri" would end in a DNS lookup and
    # a server-selection timeout instead of saying what is wrong.
    if mode is Mode.CONFIGURED and not uri.startswith(("mongodb://", "mongodb+srv://")):
        raise ConfigurationError(
            "MONGODB_URI is not a valid MongoDB URI: it must start with mongodb:// or "
            "mongodb+srv://",
            hint="use mongodb://host:port or mongodb+srv://… , or unset it for the embedded server",
        )
    try:
        client: AsyncMongoClient[Document] = AsyncMongoClient(
            uri,
            tz_aware=True,
            serverSelectionTimeoutMS=timeout_ms,
            connectTimeoutMS=timeout_ms,
            appname="alfred",
            # A reply turn's memoised reads are dropped as this process writes.
            event_listeners=[WriteInvalidation()],
            maxIdleTimeMS=EMBEDDED_POOL_IDLE_MS if mode is Mode.EMBEDDED else None,
            **WRITE_CONCERN,
        )
    except (InvalidURI, PyMongoConfigurationError, ValueError) as exc:
        if lease is not None:
            await asyncio.to_thread(lease.release)
        raise ConfigurationError(
            f"MONGODB_URI is not a valid MongoDB URI: {exc}",
            hint="use mongodb://host:port or mongodb+srv://… , or unset it for the embedded server",
        ) from None
    handle = MongoHandle(
        client=client,
        db=client[database],
        mode=mode,
        url_for_display=redact(uri),
        lease=lease,
    )
    try:
        await client.admin.command("ping")
    except OperationFailure as exc:
        await handle.close()
        raise Unavailable(
            "database",
            f"MongoDB at {handle.url_for_display} refused the connection: {exc.details or exc}",
            hint="check the user name, password and database rights in MONGODB_URI",
        ) from None
    except PyMongoError as exc:
        await handle.close()
        raise Unavailable(
            "database",
            f"cannot reach MongoDB at {handle.url_for_display} ({type(exc).__name__})",
            hint="check MONGODB_URI and that the server is running, "
            "or unset MONGODB_URI to use the embedded server",
        ) from None
    return handle


#: The embedded server's command that drops oplog entries past its cap (SecantusDB).
PRUNE_OPLOG: Final = "secantusAdmin.pruneOplog"


async def prune_oplog(handle: MongoHandle) -> int:
    """Have the embedded server drop every oplog entry its data folder still holds.

    It runs standalone and writes none (:mod:`runtime.embedded.servers`), but a folder an
    older version served as a replica set may keep entries, what was erased included; its
    cap of none makes this prune drop them all. A configured MongoDB is left alone (its
    oplog is the operator's, docs/privacy.md); returns the entries dropped."""
    if handle.mode is not Mode.EMBEDDED:
        return 0
    try:
        answer = await handle.client.admin.command(PRUNE_OPLOG)
    except PyMongoError:
        return 0
    return int(answer.get("pruned", 0) or 0)
