"""Feature flags for a gradual rollout (seed 004): the memory system as a whole, each of
its parts, and an allowlist of circles.

All default to on: a newcomer's two commands show the whole product. An operator turns
parts off in the environment (``MEMORY_RETRIEVAL=false`` …) or limits memory to some
circles (``MEMORY_ALLOWED_CIRCLES=-100123,-100456``); a DM counts as allowed when its
person belongs to an allowed circle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.models import ThreadKind, Viewer


@dataclass(frozen=True)
class MemoryFlags:
    enabled: bool = True
    retrieval: bool = True
    extraction: bool = True
    conflicts: bool = True
    cross_partner: bool = True
    calendar: bool = True
    allowed_circles: frozenset[str] = field(default_factory=frozenset)

    def on_for(self, viewer: Viewer) -> bool:
        """Whether memory runs at all for this viewer in this thread."""
        if not self.enabled:
            return False
        if not self.allowed_circles:
            return True
        thread = viewer.thread
        if thread.kind is ThreadKind.GROUP:
            return thread.circle_id in self.allowed_circles
        return bool(viewer.circle_ids & self.allowed_circles)

    def circle_allowed(self, circle_id: str | None, member_circles: frozenset[str]) -> bool:
        """The same rule for a thread known only by its circle (or, for a DM, by its
        owner's circles): used by background jobs."""
        if not self.enabled:
            return False
        if not self.allowed_circles:
            return True
        if circle_id is not None:
            return circle_id in self.allowed_circles
        return bool(member_circles & self.allowed_circles)

    def shows_owner(self, owner_user_id: str | None, viewer: Viewer) -> bool:
        """With cross-partner memories off, only the viewer's own and the circle's
        shared memories are used (never another member's, even where visible)."""
        return self.cross_partner or owner_user_id in (None, viewer.user_id)
