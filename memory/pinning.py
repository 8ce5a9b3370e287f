"""Pinning (seed 001): a pinned memory never fades with age.

Explicit memories are pinned when stored (:meth:`memory.operations.MemoryOperations.remember`);
"pin …" pins one Alfred learned by itself and "unpin …" lets a memory fade again. Only
the person's own memories and their circle's shared ones can be pinned, as with
forgetting: another member's memory stays theirs to manage, and pinning it would change
how it ranks for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory.models import Fact, Viewer
from memory.operations import first_match, similarity
from memory.ports import Embedder
from memory.privacy import is_visible
from memory.stores import FactStore

#: How close a memory must be to what was named (the scale of forgetting's match, 0.6, but
#: looser: a pin deletes nothing, and the reply names the memory, so a near miss is seen
#: and undone with "unpin that").
PIN_MATCH = 0.5

PIN_WHAT = 'Which memory should I pin? Tell me, e.g. "pin my passport number".'
NOTHING_TO_PIN = "I couldn't find a memory like that here that's yours to pin."


@dataclass(frozen=True)
class PinResult:
    """What a pin request did: the words for the person, and the memory it was about."""

    text: str
    fact: Fact | None = None


class Pinning:
    """Finds the memory a "pin …" / "unpin …" names and sets its flag."""

    def __init__(self, facts: FactStore, embedder: Embedder) -> None:
        self.facts = facts
        self.embedder = embedder

    async def closest(self, viewer: Viewer, texts: Sequence[str]) -> Fact | None:
        """The viewer's own or circle memory closest to any of ``texts`` (tried in order,
        the first one with a close enough match wins), or None."""
        own = [
            f
            for f in await self.facts.list_visible(viewer)
            if f.current
            and is_visible(f.partition, viewer)
            and f.partition.owner_user_id in (None, viewer.user_id)
        ]
        if not own:
            return None
        wanted = [t for t in texts if t.strip()]
        if not wanted:
            return None
        vectors = await self.embedder.embed(wanted)
        return first_match(wanted, vectors, own, similarity, PIN_MATCH)

    async def pin(self, viewer: Viewer, texts: Sequence[str], pinned: bool) -> PinResult:
        """Pin (or unpin) the memory ``texts`` name; the reply says which one, or why not."""
        if not any(t.strip() for t in texts):
            return PinResult(PIN_WHAT)
        fact = await self.closest(viewer, texts)
        if fact is None:
            return PinResult(NOTHING_TO_PIN)
        if fact.pinned == pinned:
            state = "already pinned" if pinned else "not pinned"
            return PinResult(f"That one is {state}: {fact.content}", fact)
        await self.facts.set_pinned([fact.id], pinned)
        if pinned:
            return PinResult(f"Pinned — this one won't fade with time: {fact.content}", fact)
        return PinResult(
            f"Unpinned — this one can fade with time like other memories: {fact.content}", fact
        )
