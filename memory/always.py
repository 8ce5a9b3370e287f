"""The always-in-context block: blobs and unabsorbed reflections visible in a thread.

Reflections shape every reply, so they are in the prompt without a search. The block is
cached per (thread, viewer, session) and rebuilt when any visible partition's notes
version moves (every reflection, absorption and blob save bumps it), so a reply never
waits for more than one small query when nothing changed.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable

from memory.models import ReflectionScope, Viewer
from memory.privacy import is_visible
from memory.stores import NotesStore

SCOPE_TITLES = {
    ReflectionScope.CIRCLE: "About this circle",
    ReflectionScope.USER: "About the people here",
    ReflectionScope.SESSION: "This conversation so far",
}
MAX_CACHED = 1024


class AlwaysInContext:
    """Builds and caches the always-in-context text for a viewer in a thread."""

    def __init__(self, notes: NotesStore) -> None:
        self.notes = notes
        self._cache: OrderedDict[tuple[object, ...], tuple[dict[str, int], str]] = OrderedDict()
        self.builds = 0

    async def block(
        self,
        viewer: Viewer,
        session_id: str | None,
        name_of: Callable[[str], str],
        *,
        keep: Callable[[str | None], bool] | None = None,
    ) -> str:
        """The block for ``viewer``; ``keep`` (by owner) narrows it further, e.g. to the
        viewer's own and the circle's notes when cross-member memories are switched off."""
        key = (
            viewer.thread.id,
            viewer.user_id,
            tuple(sorted(viewer.circle_ids)),
            session_id,
            keep is None,
        )
        versions = await self.notes.notes_versions(viewer)
        cached = self._cache.get(key)
        if cached is not None and cached[0] == versions:
            self._cache.move_to_end(key)
            return cached[1]
        text = await self._build(viewer, session_id, name_of, keep)
        self.builds += 1
        self._cache[key] = (versions, text)
        while len(self._cache) > MAX_CACHED:
            self._cache.popitem(last=False)
        return text

    async def _build(
        self,
        viewer: Viewer,
        session_id: str | None,
        name_of: Callable[[str], str],
        keep: Callable[[str | None], bool] | None,
    ) -> str:
        def shown(owner: str | None) -> bool:
            return keep is None or keep(owner)

        # Both reads at once: a new session (or a new note) puts them on the reply's path.
        all_blobs, all_reflections = await asyncio.gather(
            self.notes.visible_blobs(viewer, session_id=session_id),
            self.notes.visible_reflections(viewer, session_id=session_id),
        )
        blobs = [
            b
            for b in all_blobs
            if is_visible(b.partition, viewer) and shown(b.partition.owner_user_id)
        ]
        reflections = [
            r
            for r in all_reflections
            if is_visible(r.partition, viewer) and shown(r.partition.owner_user_id)
        ]
        sections = []
        for scope, title in SCOPE_TITLES.items():
            lines = []
            for blob in (b for b in blobs if b.scope is scope):
                lines.append(f"{_who(blob.partition.owner_user_id, viewer, name_of)}{blob.content}")
            for note in (r for r in reflections if r.scope is scope):
                lines.append(
                    f"- {_who(note.partition.owner_user_id, viewer, name_of)}{note.content}"
                )
            if lines:
                sections.append(f"**{title}:**\n" + "\n".join(lines))
        if not sections:
            return ""
        return "## What you keep in mind\n" + "\n\n".join(sections)


def _who(owner: str | None, viewer: Viewer, name_of: Callable[[str], str]) -> str:
    if owner is None or owner == viewer.user_id:
        return ""
    return f"[{name_of(owner)}] "
