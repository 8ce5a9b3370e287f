"""Edited messages: the journal keeps what a message says now, and what Alfred learned
from its old words is learned again from the new ones.

Telegram sends an edit as a new update for the same message. It is not answered (the
original was), but:

* the message's journal entry takes the new text, so nothing reads the old words again;
  an edit before formation is simply what formation sees;
* the current memories learned from that message alone are retired, kept as history
  ("the person edited the message"); one also backed by other messages stays;
* an explicit "remember that …" in the new text is stored at once, as the original was,
  and the message stays handled; anything else is unformed again, so the background
  forms it from the new text.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.flags import MemoryFlags
from memory.models import Fact, Thread, Viewer
from memory.prompts.common import Person
from memory.rules.intents import RememberIntent, detect_ambiguous_reference
from services.messages import Incoming
from services.reply.deps import ReplyDeps

EDITED = "the person edited the message"


class Edits:
    """Applies an edited message to the journal and to what was learned from it."""

    def __init__(self, deps: ReplyDeps) -> None:
        self.d = deps

    async def apply(
        self,
        inc: Incoming,
        thread: Thread,
        viewer: Viewer,
        speaker: Person,
        intent: object,
        text: str,
        members: Sequence[Person] = (),
    ) -> bool:
        """Correct the journal and the memories for an edit of ``inc``'s message to
        ``text``; False when the message was never journaled (the caller journals it)."""
        journal_id = inc.journal_id
        before = await self.d.journal.edit(journal_id, viewer.user_id, text)
        if before is None:
            return False
        if before.text == text:  # a redelivered edit, or one that changed nothing
            return True
        learned = [
            f
            for f in await self.d.facts.current_from_message(journal_id)
            if set(f.provenance.message_ids) <= {journal_id}
        ]
        kept: set[str] = set()
        if self._explicit(viewer, thread, intent) and isinstance(intent, RememberIntent):
            result = await self.d.operations.remember(
                thread, speaker, intent.payload, journal_id, members
            )
            kept = {f.id for f in result.facts}
            await self.d.journal.mark_handled([journal_id])
        await self._retire([f for f in learned if f.id not in kept])
        return True

    def _explicit(self, viewer: Viewer, thread: Thread, intent: object) -> bool:
        """Whether the new text is a "remember that …" to store at once (as the reply path
        would: memory on for this person, and no "my mom" whose owner is unclear)."""
        flags: MemoryFlags = self.d.flags()
        return (
            isinstance(intent, RememberIntent)
            and flags.on_for(viewer)
            and flags.extraction
            and detect_ambiguous_reference(intent.payload, thread.kind) is None
        )

    async def _retire(self, facts: Sequence[Fact]) -> None:
        now = self.d.clock.now()
        for fact in facts:
            await self.d.facts.invalidate(fact.id, at=now, reason=EDITED)
