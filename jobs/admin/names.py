"""The admin jobs' names: the arq function names the queue stores (part of the queue's
format, like :mod:`integrations.redis.queue`'s) and the ``alfred admin`` commands that
queue them.

Kept free of imports so the CLI can list its commands without loading the services."""

from __future__ import annotations

from typing import Final

ADMIN_CONSOLIDATE: Final = "admin_consolidate"
ADMIN_RE_EMBED: Final = "admin_re_embed"
ADMIN_PURGE_USER: Final = "admin_purge_user"
ADMIN_EXPORT_USER: Final = "admin_export_user"
ADMIN_STATS: Final = "admin_stats"
ADMIN_RECONCILE_MEM0: Final = "admin_reconcile_mem0"
ADMIN_RETRY_FORMATION: Final = "admin_retry_formation"

#: ``alfred admin <command>`` → the arq function it queues.
COMMANDS: Final = {
    "consolidate": ADMIN_CONSOLIDATE,
    "re-embed": ADMIN_RE_EMBED,
    "purge-user": ADMIN_PURGE_USER,
    "export-user": ADMIN_EXPORT_USER,
    "stats": ADMIN_STATS,
    "reconcile-mem0": ADMIN_RECONCILE_MEM0,
    "retry-formation": ADMIN_RETRY_FORMATION,
}
