"""The bundle of parts the composition root builds once per process.

Entry points hold a :class:`Services` and hand each service the narrow part of it that
it uses; building one is :func:`runtime.container.build_services`' job. This module
holds only the type, so code that is handed a bundle need not import the root.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from integrations.mem0.mirror import Mem0Mirror
from integrations.mongo.access_log import BatchedAccess
from integrations.mongo.admin import MongoAdminQueries
from integrations.mongo.capabilities import Capabilities
from integrations.mongo.connection import MongoHandle
from integrations.mongo.directory import MongoDirectory
from integrations.mongo.facts import MongoFactStore
from integrations.mongo.journal import MongoJournal
from integrations.mongo.notes import MongoNotes
from integrations.mongo.outbox import MongoOutbox
from integrations.mongo.recall_log import MongoRecallLog
from memory.always import AlwaysInContext
from memory.consolidation import ConsolidationService
from memory.facts import FactWriter
from memory.formation import FormationService
from memory.llm import LLM
from memory.ports import Clock, Embedder
from memory.retrieval import Retriever
from memory.semantic import SemanticIndex, SemanticMetrics
from runtime.settings import Settings
from services.calendar import CalendarFeature
from services.timezones import TimeZones

log = logging.getLogger(__name__)


@dataclass
class Services:
    """Everything an entry point needs, built once and closed once."""

    settings: Settings
    clock: Clock
    mongo: MongoHandle
    capabilities: Capabilities
    embedder: Embedder
    llm: LLM
    facts: MongoFactStore
    directory: MongoDirectory
    journal: MongoJournal
    notes: MongoNotes
    writer: FactWriter
    retriever: Retriever
    formation: FormationService
    consolidation: ConsolidationService
    always: AlwaysInContext
    #: The calendar use cases' bundle (it reports itself when calendars are not set up).
    calendar: CalendarFeature
    outbox: MongoOutbox
    admin_queries: MongoAdminQueries
    search_backend: str
    #: Whose clock times are told on (the reply, calendar listings, reminders).
    time_zones: TimeZones
    warnings: list[str] = field(default_factory=list)
    semantic: SemanticIndex | None = None
    semantic_metrics: SemanticMetrics | None = None
    mirror: Mem0Mirror | None = None
    #: Recall counts logged in batches (logged at close).
    access: BatchedAccess | None = None
    #: Where those batches wait for the worker to add them to the facts.
    recalls: MongoRecallLog | None = None

    async def aclose(self) -> None:
        await self.retriever.drain()
        if self.access is not None:
            try:
                await self.access.aclose()
            except Exception:  # a ranking signal: never a reason to fail a shutdown
                log.info("recall counts not written at close", exc_info=True)
        for part in (self.llm, self.semantic):
            close = getattr(part, "aclose", None)
            if close is not None:
                await close()
        await self.mongo.close()
