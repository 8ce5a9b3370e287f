"""``export-user``: one person's memories as versioned JSON — only what *they* may see.

The export answers "what does Alfred remember that I can see?", so it is computed from
the person's own DM viewer: their DM partition, plus the circle-level memories and
their own group memories of the circles they are an active member of. Other members'
memories (from their DMs or the group) never appear, even in a shared circle. The
privacy filter is inside every query (the :class:`~memory.admin_ports.AdminQueries`
adapter uses ``and_visible``), and every artefact is re-checked with
:func:`memory.privacy.is_visible` before it is written (DESIGN.md §3: one function
decides, exports included). Clarifications are the questions addressed to them.
Vectors and mem0 ids are internal and left out.

Format (``version`` changes when a field changes meaning or disappears)::

    {"format": "alfred-export", "version": 1, "exported_at": "…",
     "user": {"id", "telegram_user_id", "name", "username", "created_at", "circles"},
     "facts": [...], "reflections": [...], "consolidated": [...], "clarifications": [...]}

The job returns the document to the caller through the queue's result (so the worker
needs no shared disk): :class:`ExportDocument` prints as counts only, because arq logs
a job's result and logs never carry memory text. The CLI deletes the result from Redis
once it has written the file.
"""

from __future__ import annotations

from typing import Any

from memory.models import Thread, ThreadKind, Viewer
from memory.privacy import is_visible
from services.admin.context import AdminContext

EXPORT_FORMAT = "alfred-export"
EXPORT_VERSION = 1
#: Internal fields no export carries: vectors are meaningless outside, mem0 ids private.
_FACT_INTERNALS = {"embedding", "mem0_id"}
_SECTIONS = ("facts", "reflections", "consolidated", "clarifications")


class ExportDocument(dict[str, Any]):
    """The export, as a plain dict whose ``repr`` is counts only (safe to log)."""

    def counts(self) -> dict[str, int]:
        return {name: len(self.get(name, [])) for name in _SECTIONS}

    def __repr__(self) -> str:
        user = self.get("user") or {}
        counts = ", ".join(f"{k}={v}" for k, v in self.counts().items())
        return f"ExportDocument(user={user.get('id')!r}, {counts})"

    __str__ = __repr__


async def dm_viewer(ctx: AdminContext, user_id: str) -> Viewer:
    """The viewer a person is in their own DM, with their circles as of now."""
    thread = Thread(id=user_id, kind=ThreadKind.DM, user_id=user_id)
    return await ctx.stores.directory.viewer(user_id, thread)


async def export_user(ctx: AdminContext, user_id: str) -> ExportDocument | dict[str, Any]:
    """The export of ``user_id``, or ``{"found": False, …}`` for an unknown person."""
    s = ctx.stores
    progress = ctx.progress
    await progress.phase_start("exporting", len(_SECTIONS))
    user = await s.directory.user(user_id)
    viewer = await dm_viewer(ctx, user_id)
    q = ctx.queries

    facts = [f for f in await q.visible_facts(viewer) if is_visible(f.partition, viewer)]
    await progress.advance()
    reflections = [
        r for r in await q.visible_reflections(viewer) if is_visible(r.partition, viewer)
    ]
    await progress.advance()
    blobs = [b for b in await q.visible_blobs(viewer) if is_visible(b.partition, viewer)]
    await progress.advance()
    questions = [
        c
        for c in await q.clarifications_for(viewer)
        if c.user_id == user_id and is_visible(c.partition, viewer)
    ]
    await progress.advance()
    if user is None and not (facts or reflections or blobs or questions):
        await progress.finish("unknown user")
        return {"user_id": user_id, "found": False}

    circles = [await s.directory.circle(cid) for cid in sorted(viewer.circle_ids)]
    doc = ExportDocument(
        format=EXPORT_FORMAT,
        version=EXPORT_VERSION,
        exported_at=s.clock.now().isoformat(),
        user={
            "id": user_id,
            "telegram_user_id": user.telegram_user_id if user else None,
            "name": user.name if user else None,
            "username": user.username if user else None,
            "created_at": user.created_at.isoformat() if user else None,
            "circles": [{"id": c.id, "title": c.title} for c in circles if c is not None],
        },
        facts=[
            {**f.model_dump(mode="json", exclude=_FACT_INTERNALS), "current": f.current}
            for f in facts
        ],
        reflections=[r.model_dump(mode="json") for r in reflections],
        consolidated=[b.model_dump(mode="json") for b in blobs],
        clarifications=[c.model_dump(mode="json") for c in questions],
    )
    await progress.finish()
    return doc
