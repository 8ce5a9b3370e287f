"""An open Redis client for the job queue, checked with PING.

Where the server is (the configured URL, or the embedded server Alfred shares between
its processes) is decided by the composition root (:func:`runtime.connections.open_redis`);
this adapter opens the client on the URL it is given and translates the driver's
failures into :mod:`memory.errors`. Like the database, the embedded server is shared
by every Alfred process using the same data folder and stops when the last of them
lets go (the handle releases its lease on close).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Protocol

from redis.asyncio import Redis
from redis.exceptions import AuthenticationError, RedisError

from integrations.modes import Mode
from integrations.mongo.connection import redact
from integrations.redis.queue import reconnecting
from memory.errors import ConfigurationError, Unavailable


class ServerLease(Protocol):
    """A hold on a shared embedded server, let go of when the handle closes."""

    def release(self) -> None: ...


@dataclass
class RedisHandle:
    """An open Redis client, its URL, and the embedded lease if Alfred started the server."""

    client: Redis
    url: str
    mode: Mode
    url_for_display: str
    lease: ServerLease | None = None
    _closed: bool = field(default=False, repr=False)

    async def close(self) -> None:
        """Close the client, then let go of the embedded server."""
        if self._closed:
            return
        self._closed = True
        await self.client.aclose()
        if self.lease is not None:
            await asyncio.to_thread(self.lease.release)


async def connect_redis(
    url: str, *, mode: Mode, lease: ServerLease | None = None, ping_timeout: float = 5.0
) -> RedisHandle:
    """Open a client on ``url`` and check that it answers PING (the lease, if any, is
    released when this fails)."""
    try:
        client = Redis.from_url(
            url,
            socket_timeout=ping_timeout,
            socket_connect_timeout=ping_timeout,
            **reconnecting(),
        )
    except ValueError as exc:
        if lease is not None:
            await asyncio.to_thread(lease.release)
        raise ConfigurationError(
            f"REDIS_URL is not a valid Redis URL: {exc}",
            hint="use redis://host:port/db or rediss://…, or unset it for the embedded server",
        ) from None
    handle = RedisHandle(
        client=client, url=url, mode=mode, url_for_display=redact(url), lease=lease
    )
    try:
        await asyncio.wait_for(client.ping(), timeout=ping_timeout)
    except AuthenticationError:
        await handle.close()
        raise Unavailable(
            "job_queue",
            f"Redis at {handle.url_for_display} rejected the credentials",
            hint="check the password in REDIS_URL",
        ) from None
    except (RedisError, OSError, TimeoutError) as exc:
        await handle.close()
        raise Unavailable(
            "job_queue",
            f"cannot reach Redis at {handle.url_for_display} ({type(exc).__name__})",
            hint="check REDIS_URL and that the server is running, "
            "or unset REDIS_URL to use the embedded server",
        ) from None
    return handle


async def rewrite_append_only_file(client: Redis) -> bool:
    """Ask Redis to rewrite its append-only file (``BGREWRITEAOF``) so it holds only the
    keys that exist now, not the history of deleted ones. The server does it in the
    background (or right after a rewrite already running); False when it refused
    (append-only persistence off, or a managed server that disables the command)."""
    try:
        await client.bgrewriteaof()  # type: ignore[no-untyped-call]
    except RedisError:
        return False
    return True
