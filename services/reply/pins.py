"""Pin requests on the reply path: "pin that", "pin my locker code", "unpin …".

"pin that" points at what the person just said, or at Alfred's last answer ("what's the
wifi password?" → "It's …" → "pin that"). When what they just said is not a memory yet
(formation has not reached it), it is kept at once, as a bare "remember that" keeps it:
explicit memories are pinned, so it is pinned too, and the reply says so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from memory.models import Role, Thread, Viewer
from memory.pinning import Pinning
from memory.prompts.common import Person
from memory.rules.intents import PinIntent, detect_ambiguous_reference
from services.messages import Incoming
from services.reply.deps import ReplyDeps
from services.reply.forgetting import Forgetting

#: "pin that" after something not yet a memory: stored now, pinned as explicit ones are.
PINNED_NEW = "Pinned — I've kept it, and it won't fade with time:"

Members = Callable[[Thread], Awaitable[list[Person]]]


class PinRequests:
    """Answers a :class:`PinIntent` for the person who said it, where they said it."""

    def __init__(self, deps: ReplyDeps, forgetting: Forgetting, members: Members) -> None:
        self.d = deps
        self.forgetting = forgetting
        self.members = members
        self.pinning = Pinning(deps.facts, deps.operations.embedder)

    async def answer(
        self, inc: Incoming, thread: Thread, viewer: Viewer, speaker: Person, intent: PinIntent
    ) -> str:
        named = [intent.target] if intent.target else await self._just_said(thread, viewer)
        result = await self.pinning.pin(viewer, named, intent.pinned)
        if result.fact is None and intent.pinned and intent.target is None:
            kept = await self._keep_unformed(inc, thread, viewer, speaker)
            if kept is not None:
                return kept
        return result.text

    async def _keep_unformed(
        self, inc: Incoming, thread: Thread, viewer: Viewer, speaker: Person
    ) -> str | None:
        """The person's statement before "pin that", kept as a pinned memory; None when it
        is nothing to keep or names someone ambiguously ("Mom": whose?), and nothing was
        pinned, which the caller's reply then says."""
        flags = self.d.flags()
        if not (flags.on_for(viewer) and flags.extraction):
            return None
        said = await self.forgetting.previous_statement(thread, viewer)
        if said is None or detect_ambiguous_reference(said.text, thread.kind) is not None:
            return None
        result = await self.d.operations.remember(
            thread, speaker, said.text, inc.journal_id, await self.members(thread)
        )
        await self.d.journal.mark_handled([said.id])  # stored on request: not formed again
        if not result.facts:
            return None
        return f"{PINNED_NEW} {result.facts[0].content}"

    async def _just_said(self, thread: Thread, viewer: Viewer) -> list[str]:
        """What "pin that" points at: the person's previous message here, then Alfred's
        last answer."""
        recent = await self.d.journal.recent(thread.id, limit=10)
        mine = [m.text for m in recent if m.user_id == viewer.user_id and m.role is Role.USER]
        ours = [m.text for m in recent if m.role is Role.AGENT]
        return [*mine[-2:-1], *ours[-1:]]
