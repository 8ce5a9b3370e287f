"""The composition root: builds Alfred's parts from settings, in one place.

The bot, the worker, the CLI, benchmarks and tests all call :func:`build_services`;
tests pass overrides (a manual clock, a fake embedder). Nothing here runs at import
time. Start-up decides the search path once: Atlas when the server has Atlas Search
and Alfred's indexes are ready, the application-side indexes otherwise (with a warning
when Atlas Search exists but the indexes are missing).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from integrations.mongo.atlas_search import AtlasSearchBackend, missing_search_indexes
from integrations.mongo.capabilities import Capabilities, detect_capabilities
from integrations.mongo.connection import MongoHandle, connect_mongo
from integrations.mongo.facts import MongoFactStore
from integrations.settings import Settings
from memory.clock import SystemClock
from memory.facts import FactWriter
from memory.ports import Clock, Embedder
from memory.retrieval import ExtraLeg, RetrievalConfig, Retriever, SearchBackend
from memory.search.app_backend import AppSearchBackend
from memory.search.scope_index import ScopeIndexCache

log = logging.getLogger(__name__)


@dataclass
class Services:
    """Everything an entry point needs, built once and closed once."""

    settings: Settings
    clock: Clock
    mongo: MongoHandle
    capabilities: Capabilities
    embedder: Embedder
    facts: MongoFactStore
    writer: FactWriter
    retriever: Retriever
    search_backend: str
    warnings: list[str] = field(default_factory=list)

    async def aclose(self) -> None:
        await self.retriever.drain()
        await self.mongo.close()


async def choose_search_backend(
    mongo: MongoHandle, caps: Capabilities, store: MongoFactStore, embedder: Embedder
) -> tuple[SearchBackend, list[str]]:
    """Atlas search when it is there and ready; the application path otherwise."""
    warnings: list[str] = []
    if caps.atlas_search:
        missing = await missing_search_indexes(mongo.db)
        if not missing:
            return AtlasSearchBackend(mongo.db, store), warnings
        warnings.append(
            f"Atlas Search is available but the index(es) {', '.join(missing)} are missing or "
            "not ready: run `alfred migrate`; searching in the application meanwhile"
        )
    cache = ScopeIndexCache(store, dimensions=embedder.dimensions, model_name=embedder.model_name)
    return AppSearchBackend(cache), warnings


async def build_services(
    settings: Settings,
    *,
    clock: Clock | None = None,
    embedder: Embedder | None = None,
    retrieval: RetrievalConfig | None = None,
    extra_legs: Mapping[str, ExtraLeg] | None = None,
) -> Services:
    """Connect and assemble; the caller must ``await services.aclose()``."""
    from integrations.embedders import build_embedder

    clock = clock or SystemClock()
    embedder = embedder or build_embedder(settings)
    mongo = await connect_mongo(settings)
    try:
        caps = await detect_capabilities(mongo.db)
        store = MongoFactStore(mongo.db)
        backend, warnings = await choose_search_backend(mongo, caps, store, embedder)
        for warning in warnings:
            log.warning(warning)
        retriever = Retriever(
            backend,
            embedder,
            clock,
            retrieval or RetrievalConfig(),
            extra_legs=extra_legs,
            on_access=store.record_access,
        )
    except BaseException:
        await mongo.close()
        raise
    return Services(
        settings=settings,
        clock=clock,
        mongo=mongo,
        capabilities=caps,
        embedder=embedder,
        facts=store,
        writer=FactWriter(store, embedder, clock),
        retriever=retriever,
        search_backend=backend.name,
        warnings=warnings,
    )
