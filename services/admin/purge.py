"""``purge-user``: the complete "forget everything about me" cascade for one user, run
by an operator (a deletion request that arrived by email, a user who left Telegram).

It is the bot's own erase (DESIGN.md §3: "Forget everything" erases a user entirely),
step by step, in an order that makes an interrupted purge finish when run again:

1. **mem0 copies** of every fact the user owns or stated are deleted *first*: once the
   local facts are gone, nothing would point at those copies any more (a failure here
   is retried by the job; ``reconcile-mem0`` also finds such orphans);
2. **memories**: :meth:`MemoryOperations.forget_everything` — their facts (and the
   circle-level facts only they stated, through the forget cascade, which also removes
   the reflections, blobs and messages derived from them), their reflections, blobs,
   clarifications and every message they wrote or Alfred wrote them;
3. **calendar**: tokens revoked and deleted, event links deleted; **shared lists**: their
   DM lists, their items on circle lists (:meth:`memory.lists.ListStore.forget_user`);
4. **formation requests** of their DM thread (ids only, but they name the thread);
5. **directory**, last: their memberships, DM thread and user record. Because this
   goes last, a purge interrupted anywhere earlier still finds the user when re-run.
   Then what lies outside the stores (``AdminContext.residue``, docs/privacy.md): their
   spooled updates, kept job results naming them, Redis's append-only file rewritten,
   the embedded oplog pruned.

Every step is idempotent. A user with no directory entry and no record left is
"nothing to purge" (not an error: re-running a finished purge must succeed).
``removed`` counts what *this* run deleted (the stores' delete counts; for mem0, the
copies its listing showed before the delete), never what was planned: after an
interrupted run, the second run reports only what was still there.
``memory_partitions`` keeps its version counters (ids only, no text: the counters and
the ids of the facts their last versions changed): running processes compare them to
notice that the erased partitions changed, and drop the facts named.
"""

from __future__ import annotations

from typing import Any

from memory.constants import CLARIFICATIONS, CONSOLIDATED, FACTS, MESSAGES, REFLECTIONS
from memory.models import Fact
from memory.operations import MemoryOperations
from services.admin.context import AdminContext

#: ``forget_everything``'s count names, as the collections they were removed from.
_COLLECTION_OF = {
    "facts": FACTS,
    "reflections": REFLECTIONS,
    "consolidated": CONSOLIDATED,
    "clarifications": CLARIFICATIONS,
    "messages": MESSAGES,
}
STEPS = ("mem0", "memories", "calendar", "formation requests", "directory")


def memory_operations(ctx: AdminContext) -> MemoryOperations:
    """The same operations object the bot builds (same cascade, same mirror)."""
    s = ctx.stores
    return MemoryOperations(
        facts=s.facts,
        writer=s.writer,
        notes=s.notes,
        journal=s.journal,
        llm=s.llm,
        embedder=s.embedder,
        clock=s.clock,
        mirror=s.mirror,
    )


async def _calendar_counts(ctx: AdminContext, user_id: str) -> dict[str, int]:
    """The user's calendar records, or {} when the calendar integration is absent."""
    if ctx.calendar is None:
        return {}
    return await ctx.calendar.counts(user_id)


async def _mem0_present(ctx: AdminContext, facts: list[Fact]) -> tuple[int, int]:
    """How many of the facts' mem0 copies mem0 still holds: (listed as present, in
    partitions that could not be listed in full, hence unverified). A copy an earlier,
    interrupted purge deleted is not listed, so it is not counted again."""
    index = ctx.mem0
    by_key: dict[str, set[str]] = {}
    for fact in facts:
        if fact.mem0_id:
            by_key.setdefault(fact.partition.key(), set()).add(fact.mem0_id)
    present = unverified = 0
    for key, ids in by_key.items():
        listing = await index.list_partition(key) if index is not None else None
        if listing is None or not listing.complete:
            unverified += len(ids)
            continue
        present += len(ids & set(listing.ids))
    return present, unverified


async def _forget_calendar(ctx: AdminContext, user_id: str) -> None:
    if ctx.calendar is not None:
        await ctx.calendar.forget(user_id)


async def purge_user(ctx: AdminContext, user_id: str) -> dict[str, Any]:
    """Erase ``user_id`` entirely; returns what was removed, per collection."""
    s = ctx.stores
    footprint = await ctx.queries.user_footprint(user_id)
    calendar = await _calendar_counts(ctx, user_id)
    if not any(footprint.values()) and not any(calendar.values()):
        await ctx.progress.finish("nothing to purge")
        return {"user_id": user_id, "found": False, "removed": {}, "left": {}}
    removed: dict[str, int] = {}
    progress = ctx.progress
    await progress.phase_start("purging: mem0 copies", len(STEPS))

    facts = await s.facts.owned_by(user_id)
    if s.mirror is not None:
        # both raise if mem0 is down: the job retries
        present, unverified = await _mem0_present(ctx, facts)
        await s.mirror.forget(facts)
        removed["mem0_copies"] = present
        if unverified:
            removed["mem0_copies_unverified"] = unverified
    await progress.advance()

    progress.phase = "purging: memories"
    counts = await memory_operations(ctx).forget_everything(user_id)
    for name, n in counts.items():
        key = _COLLECTION_OF.get(name, name)
        removed[key] = removed.get(key, 0) + n
    await progress.advance()

    progress.phase = "purging: calendar"
    await _forget_calendar(ctx, user_id)
    calendar_after = await _calendar_counts(ctx, user_id)
    for name, before in calendar.items():
        removed[name] = max(0, before - calendar_after.get(name, 0))
    await progress.advance()

    if ctx.lists is not None:  # their DM lists, their items on circle lists
        removed.update(await ctx.lists.forget_user(user_id))

    progress.phase = "purging: formation requests"
    removed["formation_requests"] = await ctx.queries.delete_dm_requests(user_id)
    await progress.advance()

    progress.phase = "purging: directory"
    user = await s.directory.user(user_id)
    removed.update(await s.directory.delete_user(user_id))
    if ctx.residue is not None:
        # their spooled updates (on this host), kept job results such as an export, and
        # the history Redis and the embedded database keep of what was just deleted
        await ctx.residue.scrub(user.telegram_user_id if user else None, None, user_id)
    await progress.advance()

    # Anything still carrying the id (a message that arrived mid-purge) is reported,
    # so the operator runs it again rather than believing it finished.
    after = await ctx.queries.user_footprint(user_id)
    left = {name: n for name, n in after.items() if n}
    await progress.finish("done" if not left else "done, records arrived meanwhile")
    return {"user_id": user_id, "found": True, "removed": removed, "left": left}
