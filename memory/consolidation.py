"""Consolidation: buffered reflections of one (scope, partition) merged into one blob.

Partitions are never mixed: each blob is built only from its own partition's
reflections and its own previous text (DESIGN.md §3). The blob is saved first and the
reflections are marked absorbed after, so a crash in between only means they are
merged again next time, never that they are lost.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from memory.constants import CONSOLIDATE_AFTER, CONSOLIDATED_WORD_LIMIT
from memory.facts import clip_words
from memory.ids import new_id
from memory.llm import LLM, LLMOutputError
from memory.models import Consolidated, Partition, ReflectionScope
from memory.ports import Clock
from memory.prompts.consolidate import CONSOLIDATE, ConsolidateContext
from memory.stores import NotesStore

log = logging.getLogger(__name__)


@dataclass
class ConsolidationReport:
    scope: ReflectionScope
    partition_key: str
    session_id: str | None
    absorbed: int
    words: int


class ConsolidationService:
    """Merges reflections into blobs when a buffer is full, or when asked."""

    def __init__(self, notes: NotesStore, llm: LLM, clock: Clock) -> None:
        self.notes = notes
        self.llm = llm
        self.clock = clock

    async def consolidate(
        self,
        scope: ReflectionScope,
        partition: Partition,
        session_id: str | None = None,
        *,
        force: bool = False,
    ) -> ConsolidationReport | None:
        """Merge the buffer of (scope, partition[, session]) if full (or ``force``)."""
        if scope is not ReflectionScope.SESSION:
            session_id = None
        buffered = await self.notes.unabsorbed(scope, partition, session_id)
        if not buffered or (not force and len(buffered) < CONSOLIDATE_AFTER[scope.value]):
            return None
        limit = CONSOLIDATED_WORD_LIMIT[scope.value]
        current = await self.notes.blob(scope, partition, session_id)
        ctx = ConsolidateContext(
            scope=scope,
            current_blob=current.content if current else None,
            reflections=[r.content for r in buffered],
            word_limit=limit,
        )
        try:
            merged = (await self.llm.run(CONSOLIDATE, ctx)).content
        except LLMOutputError as exc:
            log.warning(
                "consolidation of %s skipped, reflections stay buffered: %s", partition.key(), exc
            )
            return None
        content = clip_words(merged, limit)
        if not content:
            log.warning(
                "consolidation of %s returned nothing; reflections stay buffered", partition.key()
            )
            return None
        now = self.clock.now()
        ids = [r.id for r in buffered]
        blob = Consolidated(
            id=current.id if current else new_id(),
            scope=scope,
            partition=partition,
            session_id=session_id,
            content=content,
            word_limit=limit,
            reflection_ids=[*(current.reflection_ids if current else []), *ids],
            unabsorbed_ids=[],
            last_consolidated_at=now,
        )
        saved = await self.notes.save_blob(blob)
        await self.notes.mark_absorbed(ids, saved.id)
        return ConsolidationReport(
            scope, partition.key(), session_id, len(ids), len(content.split())
        )

    async def consolidate_due(self) -> list[ConsolidationReport]:
        """Every buffer that reached its threshold (8 circle / 4 user / 4 session)."""
        done = []
        for scope, partition, session_id, count in await self.notes.buffered_groups():
            if count >= CONSOLIDATE_AFTER[scope.value]:
                report = await self.consolidate(scope, partition, session_id)
                if report is not None:
                    done.append(report)
        return done
