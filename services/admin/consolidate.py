"""``consolidate``: force-consolidate the buffered reflections of a thread, a user, a
circle or everything.

Consolidation normally waits for a buffer to fill (8 circle / 4 user / 4 session
reflections); an operator forces it after a prompt change, before an export, or to
rebuild blobs a forget cascade deleted. Each (scope, partition, session) buffer is
merged on its own, through the same :meth:`ConsolidationService.consolidate` formation
uses, so partitions never mix and reflections are marked absorbed only once their blob
is saved. Re-running is harmless: an empty buffer is skipped.

Which partitions a target covers:

* ``thread``: what the thread writes — a group's shared partitions (circle-level and
  its members'), or a DM's single partition;
* ``user``: every partition the user owns (their DM, their member partitions);
* ``circle``: every shared partition of the circle (same as its group thread);
* ``all``: every buffer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memory.models import Partition, ThreadKind
from services.admin.context import AdminContext

TARGET_KINDS = ("thread", "user", "circle", "all")


@dataclass(frozen=True)
class Target:
    """What to consolidate: a kind from :data:`TARGET_KINDS` and its id (none for all)."""

    kind: str
    id: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in TARGET_KINDS:
            raise ValueError(f"unknown consolidation target {self.kind!r}")
        if (self.kind == "all") != (self.id is None):
            raise ValueError("'all' takes no id; thread, user and circle need one")

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id}


async def _matcher(ctx: AdminContext, target: Target) -> Callable[[Partition], bool] | None:
    """A predicate over partitions, or None when the target id is unknown."""
    directory = ctx.stores.directory
    tid = target.id
    if target.kind == "all":
        return lambda _: True
    if tid is None:  # Target refuses this; an unknown target matches nothing
        return None
    if target.kind == "thread":
        thread = await directory.thread(tid)
        if thread is None:
            return None
        if thread.kind is ThreadKind.GROUP:
            circle_id = thread.circle_id
            return lambda p: p.circle_id == circle_id
        dm = Partition.dm(thread.user_id or "")
        return lambda p: p == dm
    if target.kind == "user":
        if await directory.user(tid) is None:
            return None
        return lambda p: p.owner_user_id == tid
    if await directory.circle(tid) is None:
        return None
    return lambda p: p.circle_id == tid


async def consolidate_target(ctx: AdminContext, target: Target) -> dict[str, Any]:
    """Consolidate every buffer of the target now; returns counts (no content)."""
    match = await _matcher(ctx, target)
    if match is None:
        await ctx.progress.finish(f"unknown {target.kind}")
        return {
            "target": target.as_dict(),
            "known": False,
            "buffers": 0,
            "consolidated": 0,
            "absorbed": 0,
        }
    groups = [g for g in await ctx.stores.notes.buffered_groups() if match(g[1])]
    await ctx.progress.phase_start("consolidating", len(groups))
    consolidated = absorbed = 0
    by_scope: dict[str, int] = {}
    for scope, partition, session_id, _count in groups:
        report = await ctx.stores.consolidation.consolidate(
            scope, partition, session_id, force=True
        )
        if report is not None:
            consolidated += 1
            absorbed += report.absorbed
            by_scope[scope.value] = by_scope.get(scope.value, 0) + 1
        await ctx.progress.advance()
    await ctx.progress.finish()
    return {
        "target": target.as_dict(),
        "known": True,
        "buffers": len(groups),
        "consolidated": consolidated,
        "absorbed": absorbed,
        "by_scope": by_scope,
        # a buffer the model could not merge stays buffered (never lost): try again later
        "skipped": len(groups) - consolidated,
    }
