"""Keeping mem0 in step with local facts: copies of new facts, deletion of forgotten ones.
Best effort: a failed copy is retried by the next mirror or by reconcile-mem0."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Protocol

from integrations.mongo.facts import MongoFactStore
from memory.errors import AlfredError
from memory.models import Fact
from memory.semantic import (
    SemanticIndex,
    SemanticMetrics,
)

log = logging.getLogger(__name__)

# --- writes ---------------------------------------------------------------------------


class Mem0IdStore(Protocol):
    """Where the mem0 id of a fact is kept (``MongoFactStore``)."""

    async def set_mem0_id(self, fact_id: str, mem0_id: str | None) -> None: ...


async def mirror_fact(
    store: Mem0IdStore,
    index: SemanticIndex,
    fact: Fact,
    metrics: SemanticMetrics | None = None,
) -> str | None:
    """Copy ``fact`` to mem0 and keep the mem0 id on it. Fails soft, never raises.

    The local fact is the truth and is already stored: a mem0 failure is logged and
    counted, and the fact simply has no semantic copy (``mem0_id`` unchanged). A
    reworded fact that had a copy gets a new one; the old copy is then deleted.
    """
    metrics = metrics if metrics is not None else SemanticMetrics()
    try:
        mem0_id = await index.add(fact)
    except Exception as exc:  # mirroring is best effort by design
        metrics.errors += 1
        metrics.write_errors += 1
        log.warning("%s: mirroring fact %s failed (%s)", index.name, fact.id, _why(exc))
        return None
    if mem0_id is None:
        metrics.writes_pending += 1
        log.info("%s: fact %s accepted, its id is not known yet", index.name, fact.id)
        return None
    try:
        await store.set_mem0_id(fact.id, mem0_id)
    except Exception as exc:  # the copy is useless unlinked
        metrics.write_errors += 1
        log.warning("recording the mem0 id of fact %s failed (%s)", fact.id, _why(exc))
        with contextlib.suppress(Exception):
            await index.delete([mem0_id])
        return None
    metrics.writes += 1
    if fact.mem0_id and fact.mem0_id != mem0_id:
        try:
            await index.delete([fact.mem0_id])
            metrics.deletes += 1
        except Exception as exc:  # an unlinked copy is never shown
            metrics.errors += 1
            log.warning(
                "%s: deleting the old copy of fact %s failed (%s)", index.name, fact.id, _why(exc)
            )
    return mem0_id


async def delete_mirrors(
    index: SemanticIndex, facts: Sequence[Fact], metrics: SemanticMetrics | None = None
) -> int:
    """Delete the mem0 copies of ``facts`` (the "forget" cascade). Raises on failure.

    Unlike mirroring this must not fail soft: a forgotten fact's text must not stay in
    mem0, so the caller (an idempotent job) retries on :class:`Unavailable`.
    """
    ids = [f.mem0_id for f in facts if f.mem0_id]
    if not ids:
        return 0
    try:
        await index.delete(ids)
    except Exception:
        if metrics is not None:
            metrics.errors += 1
        raise
    if metrics is not None:
        metrics.deletes += len(ids)
    return len(ids)


def _why(exc: BaseException) -> str:
    return exc.message if isinstance(exc, AlfredError) else type(exc).__name__


class Mem0Mirror:
    """Keeps mem0 in step with local facts: copies new ones, deletes forgotten ones."""

    def __init__(self, store: MongoFactStore, index: SemanticIndex, metrics: SemanticMetrics):
        self.store = store
        self.index = index
        self.metrics = metrics

    async def mirror(self, fact: Fact) -> None:
        await mirror_fact(self.store, self.index, fact, self.metrics)

    async def forget(self, facts: Sequence[Fact]) -> None:
        await delete_mirrors(self.index, facts, self.metrics)

    async def delete_copies(self, mem0_ids: Sequence[str]) -> None:
        """Delete mem0 copies by their mem0 ids (copies whose fact is already gone)."""
        await self.index.delete(mem0_ids)
