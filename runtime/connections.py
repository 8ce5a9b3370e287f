"""Opening the database and the job queue from settings: the configured URL, or a lease
on the shared embedded server that Alfred starts (and stops with its last user)."""

from __future__ import annotations

from integrations.mongo.connection import MongoHandle, connect_mongo
from integrations.redis.connection import RedisHandle, connect_redis
from runtime.endpoints import resolve_endpoint
from runtime.settings import Settings


async def open_mongo(settings: Settings) -> MongoHandle:
    """Alfred's database, checked to answer (see :func:`connect_mongo` for errors)."""
    endpoint = await resolve_endpoint(
        "mongo", settings.mongodb_uri, settings, port=settings.embedded_mongo_port
    )
    return await connect_mongo(
        endpoint.url,
        mode=endpoint.mode,
        database=settings.mongodb_database,
        timeout_ms=settings.mongodb_timeout_ms,
        lease=endpoint.lease,
    )


async def open_redis(settings: Settings, *, ping_timeout: float = 5.0) -> RedisHandle:
    """The job queue's Redis, checked to answer PING (see :func:`connect_redis`)."""
    endpoint = await resolve_endpoint(
        "redis", settings.redis_url, settings, port=settings.embedded_redis_port
    )
    return await connect_redis(
        endpoint.url, mode=endpoint.mode, lease=endpoint.lease, ping_timeout=ping_timeout
    )
