"""Forgetting and recalling on request: "forget …", "which should I forget?", "forget
everything about me", and "what do you remember about me?".

A request to forget is a person's right over their data, so these work whatever the
feature flags say; what they quote is redacted from the journal once it is answered.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from memory.context import said_by
from memory.models import (
    FORGET_CHOICE,
    Message,
    Partition,
    ReflectionScope,
    Role,
    Thread,
    User,
    Viewer,
    Visibility,
)
from memory.operations import FORGET_WHICH_REDACTED, OperationResult
from memory.privacy import is_visible
from memory.rules.addressing import strip_addressing
from memory.rules.confirm import is_confirmation
from memory.rules.intents import detect_intent
from memory.rules.intents.kinds import RememberIntent, RememberLastIntent
from memory.rules.intents.lists import detect_list_intent
from memory.rules.intents.remind import detect_reminder
from memory.search.recent import is_statement
from services.membership import Membership
from services.messages import Incoming, Outgoing, split_for_telegram
from services.reply.deps import ReplyDeps
from services.reply.directives import Standing

#: How long the erase prompt waits for its "yes": a later one does not count.
ERASE_CONFIRM_WINDOW = timedelta(minutes=5)
CONFIRM_ERASE = (
    "This will erase everything I remember about you, in every chat, for good. "
    'If you\'re sure, say "yes" now; anything else cancels it.'
)
CONFIRM_ERASE_US = (
    "This will erase everything this circle shares with me, its lists included (not what "
    'each of you told me privately). If you\'re sure, say "yes" now; anything else cancels it.'
)
#: How many facts and notes a "what do you remember about …?" lists before "…and N more".
RECALL_FACTS = 30
RECALL_NOTES = 10
#: Lines said here that formation has not reached yet, listed after the memories.
RECALL_PENDING = 5
#: "OK" or "will do" before a bare "remember that" is no statement to keep.
REMEMBER_LAST_MIN_WORDS = 3
#: The answer to a bare "remember that" with nothing before it to keep.
REMEMBER_WHAT = (
    'What should I remember? Say it with the request, e.g. "remember that my locker code is 4411".'
)
ERASE_CANCELLED = "OK — I've cancelled the erase: nothing was deleted."
ERASE_LAPSED = (
    "I didn't erase anything: I wait only 5 minutes for a yes, and that request has lapsed. "
    'Say "forget everything about me" again if you still want it.'
)


def _keepable(said: str) -> str | None:
    """``said`` without the addressing, when it is a statement a bare "remember that" keeps:
    a few words, a statement as the recent leg reads one, asking Alfred for nothing else."""
    text = strip_addressing(said).strip()
    if (
        len(text.split()) < REMEMBER_LAST_MIN_WORDS
        or not is_statement(text)
        or detect_intent(text) is not None
        or detect_reminder(text) is not None
        or detect_list_intent(text) is not None
    ):
        return None
    return text


class Forgetting:
    """The forget, erase and recall requests of the reply path."""

    def __init__(self, deps: ReplyDeps, membership: Membership) -> None:
        self.d = deps
        self.membership = membership

    async def ask_which(
        self, inc: Incoming, thread: Thread, viewer: Viewer, result: OperationResult, question: str
    ) -> list[Outgoing]:
        """Ask which of several memories to forget. The choice waits with the erase
        confirmations (the thread's pending entry for this person, so it survives a
        restart): fact ids and the ids the question is journaled under, never the text."""
        parts = split_for_telegram(result.text)
        ids = [f"{inc.chat_id}:a:{question}:{n}" for n in range(len(parts))]
        await self.d.directory.set_pending_erase(
            thread.id,
            viewer.user_id,
            FORGET_CHOICE,
            self.d.clock.now(),
            {"choices": result.choices, "question_ids": ids},
        )
        return [
            Outgoing(inc.chat_id, part, inc.message_id, {"journal_id": journal_id})
            for part, journal_id in zip(parts, ids, strict=True)
        ]

    async def forget(self, inc: Incoming, viewer: Viewer, target: str) -> OperationResult:
        """A targeted "forget …": every store (facts, notes, summaries, questions, the
        journal), then the spooled updates that say it and Redis's append-only file."""
        result = await self.d.operations.forget(viewer, target, name=inc.sender.name)
        if result.removed:
            await self._residue(viewer.user_id, inc.sender.telegram_id, [target])
        return result

    async def _residue(
        self, user_id: str, telegram_user_id: int | None, needles: list[str] | None
    ) -> None:
        if self.d.residue is not None:
            await self.d.residue.scrub(telegram_user_id, needles, user_id)

    async def forget_chosen(
        self, viewer: Viewer, pending: dict[str, object], text: str
    ) -> str | None:
        """Answer a "which should I forget?" question, or ``None`` if ``text`` is not an
        answer. Once answered, the question (which quoted the memories) is redacted in the
        journal, as the request was: after a forget its words are nowhere."""
        raw = pending.get("choices")
        choices = [[str(i) for i in group] for group in raw] if isinstance(raw, list) else []
        result = await self.d.operations.forget_chosen(viewer, choices, text)
        if result is None:
            return None
        ids = pending.get("question_ids")
        if isinstance(ids, list):
            await self.d.journal.redact([str(i) for i in ids], FORGET_WHICH_REDACTED)
        if result.removed:
            await self._residue(viewer.user_id, None, [])  # no spool to scrub
        return result.text

    def settle_erase(self, pending: dict[str, object], text: str) -> str | None:
        """The erase prompt's answer: ``None`` when ``text`` confirms it in time (the
        caller erases), otherwise what to tell the person about the cancelled erase.

        Only the person asked has a pending entry, and it is popped by their next message
        in the thread whatever it says, so nobody else's "yes" and no later "yes" counts.
        """
        asked = pending.get("at")
        if isinstance(asked, datetime):
            if asked.tzinfo is None:
                asked = asked.replace(tzinfo=UTC)
            if self.d.clock.now() - asked > ERASE_CONFIRM_WINDOW:
                return ERASE_LAPSED
        return None if is_confirmation(text) else ERASE_CANCELLED

    async def previous_text(self, thread: Thread, viewer: Viewer) -> str | None:
        """What "forget that" points at: what the person said before it.

        When that was a request to remember, what the request stored: "remember that X"
        stored X, and a bare "remember that" stored the statement before it (marked
        handled when it did). A request whose journal keeps a placeholder ("[a request to
        forget something]"), or a bare "remember that" that stored nothing, points at
        nothing: the caller asks what to forget. Taken as they were said, such words
        matched no memory, and deleted every message that shared them while the memory
        the person meant stayed, after a "Done"."""
        mine = await self._mine(thread, viewer)
        said = mine[-2] if len(mine) >= 2 else None
        if said is None:
            return None
        text = strip_addressing(said.text).strip()
        if not text or text.startswith("["):
            return None
        intent = detect_intent(text)
        if isinstance(intent, RememberIntent):
            return intent.payload
        if isinstance(intent, RememberLastIntent):
            before = mine[-3] if len(mine) >= 3 else None
            if before is None or not before.handled:
                return None
            return _keepable(before.text)
        return said.text

    async def previous_statement(self, thread: Thread, viewer: Viewer) -> Message | None:
        """What the person said before a bare "remember that", when it is something to
        keep (its text without the addressing): a statement of a few words, as the recent
        leg reads one (:func:`memory.search.recent.is_statement`), that asked Alfred for
        nothing else and that Alfred has not acted on already (an answer to "whose do you
        mean?" is handled: the memory it completed is stored, its own words are not one)."""
        mine = await self._mine(thread, viewer)
        said = mine[-2] if len(mine) >= 2 else None
        if said is None or said.handled:
            return None
        text = _keepable(said.text)
        return said.model_copy(update={"text": text}) if text is not None else None

    async def _mine(self, thread: Thread, viewer: Viewer) -> list[Message]:
        """The person's messages among the thread's last, oldest first; the one being
        answered is the last."""
        recent = await self.d.journal.recent(thread.id, limit=10)
        return [m for m in recent if m.user_id == viewer.user_id and m.role is Role.USER]

    async def recall(
        self, viewer: Viewer, target: str, instructions: Sequence[Standing] = ()
    ) -> str:
        """What Alfred remembers about the person ("me") or the circle ("us"), here.

        "me": the person's own facts and notes visible here, and the ``instructions``
        they gave. "us": everything said in a group that is visible here, so in the group
        the circle's memories and each member's from the group (never anyone's DM), and
        the circle's and members' notes. Everything is read through the viewer and
        checked again with :func:`is_visible`. When there is more than the reply lists,
        it says how much more."""
        flags = self.d.flags()
        visible = [
            f
            for f in await self.d.facts.list_visible(viewer)
            if is_visible(f.partition, viewer)
            and flags.shows_owner(f.partition.owner_user_id, viewer)
        ]
        facts = [f for f in visible if self._about(f.partition, viewer, target)]
        listed_apart = {s.note.id for s in instructions}
        notes = await self._notes(viewer, target, listed_apart)
        pending = await self._pending(viewer, target)
        if not facts and not notes and not instructions and not pending:
            who = "you" if target == "me" else "this circle"
            return f"I don't remember anything about {who} here yet."
        owners = {f.partition.owner_user_id for f in facts} - {None, viewer.user_id}
        owners |= {m.user_id for m in pending} - {None, viewer.user_id}
        names = await self.d.directory.users(sorted(o for o in owners if o))
        parts = [
            "Here's what I remember about you here:"
            if target == "me"
            else "Here's what I remember about all of you:"
        ]
        for fact in facts[:RECALL_FACTS]:
            owner = names.get(fact.partition.owner_user_id or "")
            whose = (
                f" ({owner.name})"
                if owner and owner.name.lower() not in fact.content.lower()
                else ""
            )
            parts.append(f"- {fact.content}{whose}")
        if notes:
            parts += ["Notes:", *(f"- {n}" for n in notes[:RECALL_NOTES])]
        if pending:
            parts.append("Said recently, not filed yet:")
            for message in pending:
                who = said_by(message.user_id, viewer, lambda uid: _name(names, uid))
                parts.append(f'- {who}: "{message.text.strip()}"')
        if instructions:
            parts.append("How you asked me to answer:")
            parts += [f'- "{s.instruction}"' for s in instructions]
        more = max(0, len(facts) - RECALL_FACTS) + max(0, len(notes) - RECALL_NOTES)
        if more:
            parts.append(f"…and {more} more I haven't listed: ask me about something specific.")
        return "\n".join(parts)

    async def _pending(self, viewer: Viewer, target: str) -> list[Message]:
        """What was said here that formation has not reached yet, about the person or the
        circle as :meth:`_about` reads it, oldest first: read through the viewer's filter
        as the recent-messages leg reads it, and checked again. Without it, "I'm allergic
        to peanuts" said a minute ago was missing from "what do you remember about me?"
        until formation ran, while a question about it was answered."""
        stored = await self.d.journal.unformed_visible(viewer, limit=RECALL_PENDING * 2)
        found = [
            m
            for m in stored
            if is_visible(m.partition, viewer)
            and self._about(m.partition, viewer, target)
            and is_statement(m.text)
        ]
        return list(reversed(found[:RECALL_PENDING]))

    @staticmethod
    def _about(partition: Partition, viewer: Viewer, target: str) -> bool:
        if target == "me":
            return partition.owner_user_id == viewer.user_id
        return partition.visibility is Visibility.SHARED  # said in a group, never a DM

    async def _notes(self, viewer: Viewer, target: str, skip: set[str]) -> list[str]:
        """The notes and summaries about the person or the circle visible here (not the
        notes of the current conversation, and not instructions: those are listed apart)."""
        blobs = await self.d.notes.visible_blobs(viewer, session_id=None)
        notes = await self.d.notes.visible_reflections(viewer, session_id=None)
        found = [
            b.content
            for b in blobs
            if b.scope is not ReflectionScope.SESSION
            and is_visible(b.partition, viewer)
            and self._about(b.partition, viewer, target)
        ]
        found += [
            r.content
            for r in notes
            if r.scope is not ReflectionScope.SESSION
            and not r.directive
            and r.id not in skip
            and is_visible(r.partition, viewer)
            and self._about(r.partition, viewer, target)
        ]
        return found

    async def erase(self, viewer: Viewer, target: str) -> str:
        """A confirmed "forget everything": the circle's shared memories ("us"), or
        everything about the person, in every chat ("me")."""
        d = self.d
        if target == "us" and viewer.thread.circle_id:
            circle_level = [
                f
                for f in await d.facts.list_visible(viewer, include_history=True)
                if f.partition == Partition.circle(viewer.thread.circle_id)
            ]
            removed = await d.operations.erase_facts(viewer.user_id, circle_level, [])
            # The circle's lists are the circle's too (not memories, but shared by it).
            lists = await d.lists.forget_circle(viewer.thread.circle_id)
            named = f" and {lists} list{'s' if lists != 1 else ''}" if lists else ""
            return f"Done — I've erased {removed['facts']} shared memories{named} of this circle."
        user = await d.directory.user(viewer.user_id)
        counts = await d.operations.forget_everything(viewer.user_id)
        listed = await d.lists.forget_user(viewer.user_id)
        await d.calendar.forget_user(viewer.user_id)
        # Reminders are not memories, but they are about the person: the ones they set
        # and the ones set for them go too.
        reminders = await d.reminders.forget_person(viewer.user_id) if d.reminders else 0
        await d.directory.delete_user(viewer.user_id)
        self.membership.forget_registrations()
        await self._residue(viewer.user_id, user.telegram_user_id if user else None, None)
        return (
            f"Done — I've erased everything about you ({counts.get('facts', 0)} memories, "
            f"{counts.get('messages', 0)} messages, {reminders} reminders"
            f"{_lists_erased(listed)}). If you write again, I'll start fresh."
        )


def _name(names: dict[str, User], user_id: str) -> str:
    """A member's name, or "Someone here" for an author the directory does not hold
    (never "You": that is only the viewer)."""
    user = names.get(user_id)
    return user.name if user is not None else "Someone here"


def _lists_erased(counts: dict[str, int]) -> str:
    """ ", 2 lists, 3 list items" for the erase reply: only what there was."""
    lists, items = counts.get("lists", 0), counts.get("list_items", 0)
    parts = [f"{lists} list{'s' if lists != 1 else ''}"] if lists else []
    if items:
        parts.append(f"{items} item{'s' if items != 1 else ''} on shared lists")
    return "".join(f", {p}" for p in parts)
