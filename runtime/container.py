"""The composition root: builds Alfred's parts from settings, in one place.

The bot, the worker, the CLI, benchmarks and tests all call :func:`build_services`;
tests pass overrides (a manual clock, a fake embedder). Nothing here runs at import
time. Start-up decides the search path once: Atlas when the server has Atlas Search
and Alfred's indexes are ready, the application-side indexes otherwise (with a warning
when Atlas Search exists but the indexes are missing).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from integrations.mem0.lookup import semantic_leg
from integrations.mem0.mirror import Mem0Mirror
from integrations.mongo.access_log import BatchedAccess
from integrations.mongo.admin import MongoAdminQueries
from integrations.mongo.atlas_search import AtlasSearchBackend, missing_search_indexes
from integrations.mongo.capabilities import Capabilities, detect_capabilities
from integrations.mongo.circle_move import MongoCircleMover
from integrations.mongo.connection import MongoHandle
from integrations.mongo.deliveries import MongoPendingDeliveries
from integrations.mongo.directory import MongoDirectory
from integrations.mongo.facts import MongoFactStore
from integrations.mongo.journal import MongoJournal
from integrations.mongo.lists import MongoListStore
from integrations.mongo.notes import MongoNotes
from integrations.mongo.outbox import MongoOutbox
from integrations.mongo.recall_log import MongoRecallLog
from integrations.mongo.thread_times import JournaledTimes
from integrations.mongo.time_zones import MongoTimeZones
from integrations.mongo.turn_memo import reply_turn
from memory.always import AlwaysInContext
from memory.clock import SystemClock
from memory.consolidation import ConsolidationService
from memory.facts import FactWriter
from memory.formation import FormationService
from memory.llm import LLM
from memory.operations import MemoryOperations
from memory.ports import Clock, Embedder
from memory.reminders import ReminderScheduler
from memory.reply_ports import ErasureResidue
from memory.retrieval import ExtraLeg, Retriever, SearchBackend
from memory.search.app_backend import AppSearchBackend
from memory.search.config import RetrievalConfig
from memory.search.recent import RecentLeg
from memory.search.scope_index import ScopeIndexCache
from memory.semantic import SemanticIndex, SemanticMetrics
from runtime.builders import build_embedder, build_llm, build_semantic_index
from runtime.bundle import Services
from runtime.calendar import build_calendar
from runtime.connections import open_mongo
from runtime.metrics import ExportingSemanticMetrics, ProcessMetrics
from runtime.native_threads import limit_blas_threads
from runtime.reminders import build_reminders
from runtime.settings import Mode, Settings
from services.calendar import CalendarForReply
from services.membership import Membership
from services.reply.assistant import AfterMessage, Assistant
from services.reply.deps import ReplyDeps
from services.timezones import TimeZones

log = logging.getLogger(__name__)


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
    llm: LLM | None = None,
) -> Services:
    """Connect and assemble; the caller must ``await services.aclose()``."""
    limit_blas_threads()  # the dense leg's product on one thread (runtime/native_threads.py)
    clock = clock or SystemClock()
    embedder = embedder or build_embedder(settings)
    llm = llm or build_llm(settings)
    mongo = await open_mongo(settings)
    semantic: SemanticIndex | None = None
    try:
        caps = await detect_capabilities(mongo.db)
        store = MongoFactStore(mongo.db)
        # One write per few seconds of replies instead of one per reply.
        recalls = MongoRecallLog(mongo.db)
        access = BatchedAccess(recalls)
        backend, warnings = await choose_search_backend(mongo, caps, store, embedder)
        other_models = await store.count_other_models(embedder.model_name)
        if other_models:
            warnings.append(
                f"{other_models} fact(s) were embedded with another model than "
                f"{embedder.model_name}: they are found by keywords only until re-embedded"
            )
        metrics: SemanticMetrics = ExportingSemanticMetrics()
        legs = dict(extra_legs or {})
        if settings.mem0_enabled_mode is not Mode.OFF and "mem0" not in legs:
            semantic = await build_semantic_index(settings, embedding_dims=None)
            if semantic is not None:
                legs["mem0"] = semantic_leg(semantic, mongo.db, metrics)
        for warning in warnings:
            log.warning(warning)
        retriever = Retriever(
            backend,
            embedder,
            clock,
            retrieval or RetrievalConfig(),
            extra_legs=legs,
            on_access=access.record,
            # What was said minutes ago counts at once (DESIGN.md §6.6).
            recent=RecentLeg(MongoJournal(mongo.db), embedder),
        )
    except BaseException:
        if semantic is not None:
            await semantic.aclose()
        await mongo.close()
        raise
    times = JournaledTimes()  # Alfred's replies' times bound the next history read
    directory = MongoDirectory(mongo.db, times)
    journal = MongoJournal(mongo.db, times)
    notes = MongoNotes(mongo.db)
    writer = FactWriter(store, embedder, clock)
    mirror = Mem0Mirror(store, semantic, metrics) if semantic is not None else None
    calendar = build_calendar(
        settings,
        db=mongo.db,
        clock=clock,
        directory=directory,
        writer=writer,
        facts=store,
        mirror=mirror,
    )
    time_zones = TimeZones(
        MongoTimeZones(mongo.db),
        clock,
        # Without calendars set up no connection can give a zone: one read fewer per reply.
        calendar.store if calendar.problem() is None else None,
        directory,
    )
    formation = FormationService(
        journal=journal,
        directory=directory,
        facts=store,
        writer=writer,
        notes=notes,
        llm=llm,
        embedder=embedder,
        clock=clock,
        mirror=mirror,
        flags=settings.flags(),
        zones=time_zones,
    )
    return Services(
        settings=settings,
        clock=clock,
        mongo=mongo,
        capabilities=caps,
        embedder=embedder,
        llm=llm,
        facts=store,
        directory=directory,
        journal=journal,
        notes=notes,
        writer=writer,
        retriever=retriever,
        formation=formation,
        consolidation=ConsolidationService(notes, llm, clock),
        always=AlwaysInContext(notes),
        calendar=calendar,
        access=access,
        recalls=recalls,
        time_zones=time_zones,
        outbox=MongoOutbox(mongo.db),
        admin_queries=MongoAdminQueries(mongo.db),
        search_backend=backend.name,
        warnings=warnings,
        semantic=semantic,
        semantic_metrics=metrics,
        mirror=mirror,
    )


async def load_models(services: Services) -> None:
    """Load the local embedding model now, off the event loop, before the first message.

    Loading takes about 0.6 s on a 2-core machine, longer than a search waits for its
    query's embedding (``RetrievalConfig.embed_timeout_s``, 0.4 s): loaded on first use,
    the first reply after every start searched by keywords alone. An embedder behind an
    API has nothing to load."""
    warm_up = getattr(services.embedder, "warm_up", None)
    if callable(warm_up):
        await asyncio.to_thread(warm_up)


def build_membership(services: Services) -> Membership:
    """Registration and membership changes, on the directory."""
    return Membership(
        directory=services.directory,
        clock=services.clock,
        circles=MongoCircleMover(services.mongo.db),
        facts=services.facts,
        mirror=services.mirror,
        flags=services.settings.flags,
    )


def build_assistant(
    services: Services,
    *,
    bot_username: str = "alfred",
    after_message: AfterMessage | None = None,
    residue: ErasureResidue | None = None,
    reminder_scheduler: ReminderScheduler | None = None,
) -> Assistant:
    """The reply service, with the narrow bundle of ports it uses (``residue``: what a
    forget cleans outside the stores, see :mod:`runtime.erasure`; ``reminder_scheduler``:
    the queue reminders are deferred on, or None to leave them to the sweep)."""
    operations = MemoryOperations(
        facts=services.facts,
        writer=services.writer,
        notes=services.notes,
        journal=services.journal,
        llm=services.llm,
        embedder=services.embedder,
        clock=services.clock,
        mirror=services.mirror,
        model_budget=services.settings.llm_explicit_budget,
        zones=services.time_zones,
    )
    deps = ReplyDeps(
        clock=services.clock,
        directory=services.directory,
        journal=services.journal,
        facts=services.facts,
        notes=services.notes,
        llm=services.llm,
        retriever=services.retriever,
        always=services.always,
        operations=operations,
        flags=services.settings.flags,
        observer=ProcessMetrics(),
        calendar=CalendarForReply(services.calendar),
        lists=MongoListStore(services.mongo.db),
        residue=residue,
        time_zones=services.time_zones,
        deliveries=MongoPendingDeliveries(services.mongo.db),
        reminders=build_reminders(services, reminder_scheduler),
        turn_scope=reply_turn,
    )
    return Assistant(
        deps,
        build_membership(services),
        bot_username=bot_username,
        after_message=after_message,
    )
