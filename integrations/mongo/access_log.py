"""Recall counts written in batches: one write for many replies instead of one each.

Every answered message that retrieves counts a recall of the facts it used
(``access_count``, ``last_accessed_at``: a ranking signal, decay's "used lately"). It
never blocked the reply (the retriever records it in the background), but it was one
database round trip per message. Here the counts of many replies are added up and
logged together, as one small document (:mod:`integrations.mongo.recall_log`, which a
worker adds to the facts), when :data:`FLUSH_AFTER_S` have passed since the first
unwritten one or :data:`FLUSH_AT_FACTS` facts are waiting, and at shutdown
(:meth:`BatchedAccess.flush`).

What a crash can lose is at most those few seconds of counts, a ranking signal that
nobody was told about; nothing a person said or was promised waits here.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Final

from integrations.mongo.recall_log import MongoRecallLog

log = logging.getLogger(__name__)

#: Seconds an unwritten count may wait.
FLUSH_AFTER_S: Final = 5.0
#: Facts waiting that make a write due at once.
FLUSH_AT_FACTS: Final = 256


class BatchedAccess:
    """``on_access`` for the retriever: counts recalls, writes them in batches."""

    def __init__(
        self,
        log: MongoRecallLog,
        *,
        flush_after_s: float = FLUSH_AFTER_S,
        flush_at_facts: int = FLUSH_AT_FACTS,
    ) -> None:
        self._log = log
        self._flush_after_s = flush_after_s
        self._flush_at_facts = flush_at_facts
        self._counts: Counter[str] = Counter()
        self._last: dict[str, datetime] = {}
        self._timer: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.writes = 0  # batches logged, for tests and the benchmark

    async def record(self, fact_ids: Sequence[str], at: datetime) -> None:
        """Count one recall of each of ``fact_ids`` at ``at``."""
        for fact_id in fact_ids:
            self._counts[fact_id] += 1
            self._keep_latest(fact_id, at)
        if len(self._counts) >= self._flush_at_facts:
            await self.flush()
        elif self._counts and self._timer is None:
            self._timer = asyncio.create_task(self._flush_later())

    async def _flush_later(self) -> None:
        try:
            await asyncio.sleep(self._flush_after_s)
            self._timer = None
            await self.flush()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # counts stay pending and go with the next write
            log.info("recall counts not written yet: %s", type(exc).__name__)

    async def flush(self) -> None:
        """Log every pending count now (one insert), e.g. at shutdown."""
        async with self._lock:
            if not self._counts:
                return
            counts, last = self._counts, self._last
            self._counts, self._last = Counter(), {}
            try:
                await self._log.append({i: (n, last[i]) for i, n in counts.items()})
                self.writes += 1
            except Exception:
                self._counts.update(counts)  # kept for the next write
                for fact_id, at in last.items():
                    self._keep_latest(fact_id, at)
                raise

    def _keep_latest(self, fact_id: str, at: datetime) -> None:
        """Remember the later of ``at`` and the recall time already waiting for the fact."""
        held = self._last.get(fact_id)
        self._last[fact_id] = at if held is None or at > held else held

    async def aclose(self) -> None:
        """Stop the timer and write what is pending."""
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
            await asyncio.gather(timer, return_exceptions=True)
        await self.flush()
