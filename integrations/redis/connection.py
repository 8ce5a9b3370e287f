"""Connecting to Redis for the job queue: the configured URL, or the embedded server.

Like the database, the embedded server is shared by every Alfred process using the same
data folder and stops when the last of them lets go.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from redis.asyncio import Redis
from redis.exceptions import AuthenticationError, RedisError

from integrations.mongo.connection import redact
from memory.errors import ConfigurationError, Unavailable
from runtime.embedded import EmbeddedLease
from runtime.endpoints import resolve_endpoint
from runtime.settings import Mode, Settings


@dataclass
class RedisHandle:
    """An open Redis client, its URL, and the embedded lease if Alfred started the server."""

    client: Redis
    url: str
    mode: Mode
    url_for_display: str
    lease: EmbeddedLease | None = None
    _closed: bool = field(default=False, repr=False)

    async def close(self) -> None:
        """Close the client, then let go of the embedded server."""
        if self._closed:
            return
        self._closed = True
        await self.client.aclose()
        if self.lease is not None:
            await asyncio.to_thread(self.lease.release)


async def connect_redis(settings: Settings, *, ping_timeout: float = 5.0) -> RedisHandle:
    """Open the job-queue Redis and check that it answers PING."""
    endpoint = await resolve_endpoint(
        "redis", settings.redis_url, settings, port=settings.embedded_redis_port
    )
    url, mode, lease = endpoint.url, endpoint.mode, endpoint.lease
    try:
        client = Redis.from_url(
            url, socket_timeout=ping_timeout, socket_connect_timeout=ping_timeout
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
