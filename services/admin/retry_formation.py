"""``retry-formation``: form again the batches formation set aside.

A batch is set aside after three formation jobs failed on it because the model's
answer was invalid (:mod:`memory.formation`), so one bad batch never blocks its thread.
Once the model behaves again (a prompt fix, another model, an endpoint back to normal)
the operator puts those messages back in line with a fresh failure count, and each
thread gets a formation request as if its messages had just arrived. Safe to repeat:
with nothing set aside it does nothing; formation itself is idempotent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from services.admin.context import AdminContext

#: Asks for one thread's formation (the duty :func:`services.formation_duties.request_formation`).
RequestFormation = Callable[[str], Awaitable[object]]


async def retry_formation(
    ctx: AdminContext, request: RequestFormation, thread_id: str | None = None
) -> dict[str, Any]:
    """Release the set-aside messages of ``thread_id`` (every thread when None) and ask
    for their formation. Counts and thread ids only (the result is logged)."""
    await ctx.progress.phase_start("releasing", 1)
    released = await ctx.stores.journal.release_set_aside(thread_id)
    await ctx.progress.advance()
    await ctx.progress.phase_start("requesting", len(released))
    for tid in sorted(released):
        await request(tid)
        await ctx.progress.advance()
    await ctx.progress.finish()
    return {
        "thread_id": thread_id,
        "threads": len(released),
        "messages": sum(released.values()),
        "thread_ids": sorted(released),
    }
