"""The optional semantic layer (mem0) as the domain sees it: a port, a retrieval leg,
and the in-process metrics both report to.

mem0 is a second copy of the facts, never the source of truth. Three rules follow:

* **Partition isolation inside mem0 too.** Every fact is stored under its partition's
  key as mem0's ``user_id`` (:func:`semantic_user_id`), so one mem0 search can only ever
  look inside one partition. The leg searches only the partitions the viewer may see.
* **mem0 answers with ids, Alfred decides what is shown.** A hit is a mem0 id and a
  score. :class:`SemanticLeg` maps ids back to local facts through a resolver whose
  query carries the privacy filter, then re-checks every fact with
  :func:`memory.privacy.is_visible`. A hit with no local record, one that is not
  visible, or one whose local partition is not the partition it was found in (mem0
  disagrees with what we stored: corruption or poisoning) is dropped and counted.
* **mem0 is optional and may be slow or down.** The leg reports failures to the
  retriever (which degrades to its other legs) and counts them in
  :class:`SemanticMetrics` so operators can see latency percentiles, timeouts, errors
  and fallbacks.

This module is pure domain: it imports neither mem0 nor a database driver.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

from memory.errors import Unavailable
from memory.models import Fact, Partition, Viewer
from memory.privacy import is_visible

log = logging.getLogger(__name__)

#: Metadata key carrying the local fact id on every mem0 memory (for audits and repair;
#: retrieval maps hits by ``mem0_id``, never by this value).
FACT_ID_KEY: Final = "alfred_fact_id"
#: Metadata key carrying the partition key (the same value as mem0's ``user_id``).
PARTITION_KEY: Final = "alfred_pkey"

#: How many latency samples are kept; enough for stable p99s, small enough to ignore.
LATENCY_SAMPLES: Final = 2048


def semantic_user_id(partition: Partition) -> str:
    """The mem0 ``user_id`` a partition's facts are stored under: its key.

    One mem0 "user" per partition is what makes every mem0 search single-partition.
    """
    return partition.key()


def semantic_metadata(fact: Fact) -> dict[str, Any]:
    """The metadata stored beside a fact in mem0: partition fields and the local id.

    mem0 reserves ``user_id``/``agent_id``/``run_id``/``app_id`` (and ``actor_id``) as
    identity fields, so the partition's own fields use their Alfred names.
    """
    return {
        FACT_ID_KEY: fact.id,
        PARTITION_KEY: fact.partition.key(),
        **fact.partition.as_fields(),
    }


@runtime_checkable
class SemanticIndex(Protocol):
    """A semantic copy of the facts, searched one partition at a time (mem0).

    Implementations translate their transport errors into
    :class:`memory.errors.Unavailable` so callers catch one family.
    """

    #: A short name for logs and metrics ("mem0-cloud", "mem0-oss").
    name: str

    async def add(self, fact: Fact) -> str | None:
        """Store ``fact`` verbatim (no inference) under its partition.

        Returns the index's id for it, or ``None`` when the index accepted the write but
        cannot name the id yet (asynchronous processing that outlived the wait).
        """
        ...

    async def delete(self, mem0_ids: Sequence[str]) -> None:
        """Delete these entries; ids that no longer exist are not an error."""
        ...

    async def search(self, partition_key: str, query: str, k: int) -> list[tuple[str, float]]:
        """The ``k`` best entries of one partition for ``query``: ``(id, score)``, best first."""
        ...

    async def aclose(self) -> None:
        """Release connections and local stores."""
        ...


#: Resolves index ids to the local facts that carry them: ``id -> (fact id, partition)``.
#: The query behind it must apply the viewer's privacy filter; ids it cannot (or may
#: not) resolve are simply absent.
SemanticResolver = Callable[[Viewer, Sequence[str]], Awaitable[dict[str, tuple[str, Partition]]]]
#: Lists the partitions holding facts the viewer may see.
PartitionLister = Callable[[Viewer], Awaitable[Sequence[Partition]]]


@dataclass
class SemanticMetrics:
    """Counters and latency samples of the semantic layer, kept in process.

    The Prometheus exporter (later) reads :meth:`snapshot`; tests read the fields.
    """

    searches: int = 0
    #: Leg calls that ran out of time (own timeout, or cancelled by the retriever's).
    timeouts: int = 0
    #: Failed index calls (one per failed partition search, add or delete).
    errors: int = 0
    #: Leg calls that contributed nothing because of a failure: retrieval fell back to
    #: the local legs alone.
    fallbacks: int = 0
    #: Leg calls where some partition searches failed but others answered.
    partial: int = 0
    hits: int = 0
    #: Hits with no current local fact the viewer may see (deleted, never mirrored, or
    #: filtered out by the privacy query).
    dropped_unknown: int = 0
    #: Hits resolved to a fact that failed the privacy re-check or lives in another
    #: partition than the one searched: mem0 disagrees with Alfred (alarm on this).
    dropped_foreign: int = 0
    writes: int = 0
    write_errors: int = 0
    #: Writes accepted by the index whose id was not known in time.
    writes_pending: int = 0
    deletes: int = 0
    #: Latency of completed leg calls, in milliseconds (most recent samples).
    latency_ms: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_SAMPLES))

    def observe_latency(self, ms: float) -> None:
        self.latency_ms.append(ms)

    def percentile(self, q: float) -> float | None:
        """The ``q``-th percentile (0-100) of the kept latency samples, nearest-rank."""
        if not self.latency_ms:
            return None
        if not 0 <= q <= 100:
            raise ValueError("a percentile is between 0 and 100")
        ordered = sorted(self.latency_ms)
        rank = max(1, math.ceil(q / 100 * len(ordered)))
        return ordered[rank - 1]

    def snapshot(self) -> dict[str, float | int | None]:
        """Every counter plus p50/p95/p99, as plain numbers."""
        return {
            "searches": self.searches,
            "timeouts": self.timeouts,
            "errors": self.errors,
            "fallbacks": self.fallbacks,
            "partial": self.partial,
            "hits": self.hits,
            "dropped_unknown": self.dropped_unknown,
            "dropped_foreign": self.dropped_foreign,
            "writes": self.writes,
            "write_errors": self.write_errors,
            "writes_pending": self.writes_pending,
            "deletes": self.deletes,
            "latency_p50_ms": self.percentile(50),
            "latency_p95_ms": self.percentile(95),
            "latency_p99_ms": self.percentile(99),
        }


class SemanticLeg:
    """The mem0 leg of retrieval: an :data:`memory.retrieval.ExtraLeg`.

    Called as ``await leg(viewer, query, k)``; returns local fact id → score for facts
    the viewer may see. Each visible partition is searched concurrently (one mem0
    ``user_id`` each), the hits are merged, resolved to local facts through the
    privacy-filtered ``resolver``, and re-checked one by one.
    """

    def __init__(
        self,
        index: SemanticIndex,
        resolver: SemanticResolver,
        partitions: PartitionLister,
        metrics: SemanticMetrics | None = None,
        *,
        timeout_s: float | None = None,
    ) -> None:
        """``timeout_s`` bounds the whole leg on its own; leave it ``None`` to rely on
        the retriever's per-leg timeout (a cancellation from there counts as a timeout)."""
        self.index = index
        self.resolver = resolver
        self.partitions = partitions
        self.metrics = metrics if metrics is not None else SemanticMetrics()
        self.timeout_s = timeout_s

    async def __call__(self, viewer: Viewer, query: str, k: int) -> dict[str, float]:
        metrics = self.metrics
        metrics.searches += 1
        started = time.perf_counter()
        try:
            if self.timeout_s is None:
                hits = await self._search(viewer, query, k)
            else:
                hits = await asyncio.wait_for(self._search(viewer, query, k), self.timeout_s)
        except (TimeoutError, asyncio.CancelledError):
            metrics.timeouts += 1
            metrics.fallbacks += 1
            raise
        except Exception:
            metrics.fallbacks += 1
            raise
        metrics.observe_latency((time.perf_counter() - started) * 1000.0)
        return hits

    async def _search(self, viewer: Viewer, query: str, k: int) -> dict[str, float]:
        if k <= 0 or not query.strip():
            return {}
        # The lister already filters in its query; re-check so a wrong lister cannot widen it.
        partitions = {p.key(): p for p in await self.partitions(viewer) if is_visible(p, viewer)}
        if not partitions:
            return {}
        keys = sorted(partitions)
        outcomes = await asyncio.gather(
            *(self.index.search(key, query, k) for key in keys), return_exceptions=True
        )
        found: dict[str, tuple[float, str]] = {}
        failures: list[BaseException] = []
        for key, outcome in zip(keys, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                if isinstance(outcome, asyncio.CancelledError):
                    raise outcome
                failures.append(outcome)
                continue
            for mem0_id, score in outcome:
                best = found.get(mem0_id)
                if best is None or score > best[0]:
                    found[mem0_id] = (float(score), key)
        if failures:
            self.metrics.errors += len(failures)
            log.warning(
                "semantic search failed in %d of %d partitions (%s)",
                len(failures),
                len(keys),
                type(failures[0]).__name__,
            )
            if len(failures) == len(keys):
                # The retriever drops the leg and the local legs answer.
                raise Unavailable(self.index.name, "every partition search failed") from failures[0]
            self.metrics.partial += 1
        if not found:
            return {}
        ranked = sorted(found, key=lambda i: (-found[i][0], i))[:k]
        self.metrics.hits += len(ranked)
        resolved = await self.resolver(viewer, ranked)
        out: dict[str, float] = {}
        for mem0_id in ranked:
            score, searched = found[mem0_id]
            local = resolved.get(mem0_id)
            if local is None:
                self.metrics.dropped_unknown += 1
                continue
            fact_id, partition = local
            if partition.key() != searched or not is_visible(partition, viewer):
                self.metrics.dropped_foreign += 1
                log.warning(
                    "%s returned a hit outside the searched partition; dropped", self.index.name
                )
                continue
            if score > out.get(fact_id, -math.inf):
                out[fact_id] = score
        return out
