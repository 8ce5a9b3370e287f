"""``reconcile-mem0``: make mem0 hold exactly one copy of every current local fact.

mem0 is a second copy, never the truth (DESIGN.md §7), and copies drift: mirroring
fails soft when mem0 is down (the fact keeps ``mem0_id = None``), a crash between a
local delete and the mem0 delete leaves an orphan, a copy may vanish on mem0's side.
This job repairs all three, in this order:

1. **missing**: current facts with no ``mem0_id`` are mirrored (``mirror_fact``);
2. **orphans**: for every partition key Alfred knows (mem0 ``user_id``), the entries
   mem0 lists there whose id no local fact (current or history) points to are deleted
   — after a forget, no copy of the text may stay in mem0;
3. **stale links**: current facts whose ``mem0_id`` mem0 no longer lists (only when the
   partition's listing was complete) are mirrored again.

With mem0 off it says so and touches nothing. ``dry_run`` counts without changing.
Entries stored under a ``user_id`` that is no partition key of this database cannot be
found (mem0 cannot list without an entity filter); that is reported as a limit, not
hidden. A copy added by formation in the instant between mem0's answer and the local
``mem0_id`` write can look orphaned; deleting it only makes its fact a stale link,
which the next run repairs.
"""

from __future__ import annotations

from typing import Any

from memory.models import Fact
from services.admin.context import AdminContext

MEM0_OFF = "mem0 is off (MEM0_MODE=off, or no MEM0_API_KEY): nothing to reconcile"


async def reconcile_mem0(ctx: AdminContext, *, dry_run: bool = False) -> dict[str, Any]:
    """Mirror missing facts, delete orphaned copies, repair stale links; counts only."""
    index = ctx.mem0
    progress = ctx.progress
    if index is None:
        await progress.finish("mem0 is off")
        return {"enabled": False, "message": MEM0_OFF}
    q = ctx.queries
    report: dict[str, Any] = {
        "enabled": True,
        "index": index.name,
        "dry_run": dry_run,
        "missing": 0,
        "mirrored": 0,
        "mirror_failed": 0,
        "partitions": 0,
        "orphans": 0,
        "orphans_deleted": 0,
        "stale_links": 0,
        "relinked": 0,
        "partitions_unlisted": 0,
        "partitions_partly_listed": 0,
    }

    async def mirror(fact: Fact) -> bool:
        """Copy one fact; a failure is counted (mirroring fails soft, never raises)."""
        ok = await index.mirror(fact)
        report["mirror_failed"] += int(not ok)
        return ok

    missing = await q.current_facts_without_mem0()
    report["missing"] = len(missing)
    await progress.phase_start("mirroring facts missing from mem0", len(missing))
    for fact in missing:
        if not dry_run and await mirror(fact):
            report["mirrored"] += 1
        await progress.advance()

    keys = await q.partition_keys()
    report["partitions"] = len(keys)
    await progress.phase_start("checking mem0 partitions", len(keys))
    for key in keys:
        listing = await index.list_partition(key)
        if listing is None:
            report["partitions_unlisted"] += 1
            await progress.advance()
            continue
        ids = list(listing.ids)
        known = await q.known_mem0_ids(ids)
        orphans = [i for i in ids if i not in known]
        report["orphans"] += len(orphans)
        if orphans and not dry_run:
            await index.delete(orphans)  # raises when mem0 fails: the job retries
            report["orphans_deleted"] += len(orphans)
        if listing.complete:
            present = set(ids)
            stale = [f for f in await q.linked_facts(key) if f.mem0_id not in present]
            report["stale_links"] += len(stale)
            for fact in stale:
                if not dry_run and await mirror(fact):
                    report["relinked"] += 1
        else:
            report["partitions_partly_listed"] += 1
        await progress.advance()
    await progress.finish()
    return report
