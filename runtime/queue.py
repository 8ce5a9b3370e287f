"""Connecting to the job queue's Redis from the settings: the configured URL, or the
embedded server (joined or started, shared like the database)."""

from __future__ import annotations

from integrations.redis.connection import RedisHandle, open_redis
from runtime.endpoints import resolve_endpoint
from runtime.settings import Settings


async def connect_redis(settings: Settings, *, ping_timeout: float = 5.0) -> RedisHandle:
    """Open the job-queue Redis and check that it answers PING."""
    endpoint = await resolve_endpoint(
        "redis", settings.redis_url, settings, port=settings.embedded_redis_port
    )
    return await open_redis(endpoint.url, endpoint.mode, endpoint.lease, ping_timeout=ping_timeout)
