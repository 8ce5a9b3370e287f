"""Opening the database and the job queue from settings: the configured URL, or a lease
on the shared embedded server that Alfred starts (and stops with its last user)."""

from __future__ import annotations

from integrations.mongo.connection import MongoHandle, connect_mongo
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
