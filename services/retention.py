"""Retention duties: purge circles archived long enough, and old raw messages.

A group that removed Alfred is archived, not erased: its members may add the bot back.
After ``CIRCLE_RETENTION_DAYS`` everything of that circle is deleted (facts with their
history and mem0 copies, notes, clarifications, messages, threads). Raw messages are
kept ``MESSAGE_RETENTION_DAYS`` after formation, then dropped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from memory.admin_ports import RetentionStores

log = logging.getLogger(__name__)


@dataclass
class RetentionReport:
    circles_purged: list[str] = field(default_factory=list)
    removed: dict[str, int] = field(default_factory=dict)
    messages_dropped: int = 0


@dataclass
class Retention:
    """The stores and the two periods (days), as the composition root configures them."""

    stores: RetentionStores
    circle_days: int
    message_days: int


async def purge_circle(stores: RetentionStores, circle_id: str) -> dict[str, int]:
    """Delete every trace of one circle."""
    facts = await stores.facts.in_circle(circle_id)
    deleted = await stores.facts.delete([f.id for f in facts])
    if stores.mirror is not None:
        await stores.mirror.forget(deleted)
    counts = {"facts": len(deleted)}
    counts.update(await stores.notes.delete_for_circle(circle_id))
    counts["messages"] = await stores.journal.delete_for_circle(circle_id)
    await stores.directory.delete_circle(circle_id)
    return counts


async def apply_retention(retention: Retention, now: datetime) -> RetentionReport:
    """Run both duties once (idempotent: a purge interrupted halfway finishes next time)."""
    stores = retention.stores
    report = RetentionReport()
    cutoff = now - timedelta(days=retention.circle_days)
    for circle in await stores.directory.archived_before(cutoff):
        counts = await purge_circle(stores, circle.id)
        report.circles_purged.append(circle.id)
        for key, value in counts.items():
            report.removed[key] = report.removed.get(key, 0) + value
        log.info("purged archived circle %s: %s", circle.id, counts)
    report.messages_dropped = await stores.journal.purge_formed_before(
        now - timedelta(days=retention.message_days)
    )
    return report
