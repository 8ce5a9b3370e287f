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

from runtime.container import Services

log = logging.getLogger(__name__)


@dataclass
class RetentionReport:
    circles_purged: list[str] = field(default_factory=list)
    removed: dict[str, int] = field(default_factory=dict)
    messages_dropped: int = 0


async def purge_circle(services: Services, circle_id: str) -> dict[str, int]:
    """Delete every trace of one circle."""
    facts = await services.facts.in_circle(circle_id)
    deleted = await services.facts.delete([f.id for f in facts])
    if services.mirror is not None:
        await services.mirror.forget(deleted)
    counts = {"facts": len(deleted)}
    counts.update(await services.notes.delete_for_circle(circle_id))
    counts["messages"] = await services.journal.delete_for_circle(circle_id)
    await services.directory.delete_circle(circle_id)
    return counts


async def apply_retention(services: Services, now: datetime) -> RetentionReport:
    """Run both duties once (idempotent: a purge interrupted halfway finishes next time)."""
    settings = services.settings
    report = RetentionReport()
    cutoff = now - timedelta(days=settings.circle_retention_days)
    for circle in await services.directory.archived_before(cutoff):
        counts = await purge_circle(services, circle.id)
        report.circles_purged.append(circle.id)
        for key, value in counts.items():
            report.removed[key] = report.removed.get(key, 0) + value
        log.info("purged archived circle %s: %s", circle.id, counts)
    report.messages_dropped = await services.journal.purge_formed_before(
        now - timedelta(days=settings.message_retention_days)
    )
    return report
