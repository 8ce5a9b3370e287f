"""Alfred's questions, bound to where and when they were asked.

A question (a contradiction formation found, or "whose do you mean?" for an ambiguous
"Mom") is answered only by the asked person, and only by

* their **next message in the same thread**, within
  :data:`memory.constants.CLARIFICATION_NEXT_MESSAGE_SECONDS` (30 minutes), or
* their **Telegram reply to the question's message**, within
  :data:`memory.constants.CLARIFICATION_TTL_DAYS` (7 days); after that it expires.

Only a short answer completes it ("yes", "no, still Boston", "mine", "Bob's", "her
sister Jane"); anything else leaves the question pending and is handled as a normal
message, so a bare "yes" about something else, later, never answers it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Final, Protocol

from memory.constants import CLARIFICATION_NEXT_MESSAGE_SECONDS, CLARIFICATION_TTL_DAYS
from memory.facts import FactWriter
from memory.models import Clarification, Role, Thread, Viewer
from memory.ports import Clock
from memory.prompts.common import Person
from memory.rules.intents import strip_addressing
from memory.stores import FactStore, JournalStore, NotesStore


class _Said(Protocol):
    @property
    def text(self) -> str: ...


class _Operations(Protocol):
    """What answering needs of :class:`memory.operations.MemoryOperations`."""

    facts: FactStore
    writer: FactWriter
    notes: NotesStore
    journal: JournalStore
    clock: Clock

    async def remember(
        self, thread: Thread, speaker: Person, payload: str, message_id: str
    ) -> _Said: ...


YES: Final = re.compile(
    r"^\s*(yes|yeah|yep|yup|correct|right|it (has )?changed|that'?s right|true)\b", re.I
)
NO: Final = re.compile(
    r"^\s*(no|nope|nah|not really|it hasn'?t|still|wrong|that'?s wrong|no,? it'?s the same)\b",
    re.I,
)
#: An answer is short: a question's answer, not a new conversation.
SHORT_ANSWER_WORDS: Final = 6
#: How long before the question was asked a message the person sent after the one it
#: followed may have been journaled (two of their messages handled at once): the read of
#: what they said since starts this much earlier, and never at the thread's beginning.
SPOKE_SINCE_MARGIN: Final = timedelta(minutes=10)
_MINE: Final = re.compile(
    r"^(?:mine|my\s+own|me|my\s+one|it'?s\s+mine|i\s+do|i\s+mean\s+mine)$", re.I
)
_POSSESSIVE: Final = re.compile(r"^(?:it'?s\s+)?(?P<name>[A-Z][\w-]*)(?:'s|’s|s')$")
#: Words that make a "short answer" a sentence of its own ("I love it", "what?").
_NOT_A_NOUN_PHRASE: Final = re.compile(
    r"\?|\b(?:is|are|was|were|am|do|does|did|have|has|will|would|can|could|should|love|like"
    r"|think|know|want|need|go|went|thanks|thank|lol|ok|okay|hello|hi)\b",
    re.I,
)


#: Whom a short answer names: "her sister Jane", "my neighbour", "Jane", "Bob's mom".
_NOUN_PHRASE: Final = re.compile(
    r"^(?:(?:my|her|his|their|our|the)\s+[\w'-]+|[A-Z][\w'-]*)(?:\s+[\w'-]+){0,2}$"
)


def short(text: str) -> str | None:
    """``text`` without addressing and end punctuation, if it is short enough to be an
    answer; else ``None``."""
    body = re.sub(r"[\s.!]+$", "", strip_addressing(text).strip())
    if not body or len(body.split()) > SHORT_ANSWER_WORDS:
        return None
    return body


def whose(reference: str, answer: str) -> str | None:
    """The reference made definite by a short answer to "whose do you mean?":
    "mine" → "my mom", "Bob's" → "Bob's mom", "her sister Jane" → "her sister Jane";
    ``None`` when the answer is not a noun phrase."""
    noun = re.sub(r"^(?:the|a|an|her|his|their)\s+", "", reference.strip(), flags=re.I).lower()
    if _MINE.match(answer):
        return f"my {noun}"
    owner = _POSSESSIVE.match(answer)
    if owner is not None:
        return f"{owner.group('name')}'s {noun}"
    if _NOT_A_NOUN_PHRASE.search(answer) or YES.match(answer) or NO.match(answer):
        return None
    return answer if _NOUN_PHRASE.match(answer) else None


def ambiguous_id(thread: Thread, message_id: int) -> str:
    return hashlib.sha256(f"whose|{thread.id}|{message_id}".encode()).hexdigest()[:24]


@dataclass
class Clarifications:
    """Asking and answering, through the memory operations' stores."""

    ops: _Operations

    async def question_for(self, viewer: Viewer, *, after_message: int | None = None) -> str | None:
        """A pending question for this person here, now asked and bound to this thread."""
        ops = self.ops
        item = await ops.notes.pending_clarification(viewer)
        if item is None:
            return None
        await ops.notes.mark_clarification_asked(
            item.id, thread_id=viewer.thread.id, at=ops.clock.now(), after_message=after_message
        )
        return item.question

    async def ask_whose(
        self, viewer: Viewer, payload: str, reference: str, question: str, message_id: int
    ) -> None:
        """Keep "remember that Mom …" until the person says whose "Mom" is meant."""
        ops = self.ops
        now = ops.clock.now()
        item = Clarification(
            id=ambiguous_id(viewer.thread, message_id),
            user_id=viewer.user_id,
            partition=viewer.thread.partition_for(viewer.user_id),
            question=question,
            kind="ambiguous_reference",
            proposed_content=payload,
            reference=reference,
            status="asked",
            created_at=now,
            asked_thread_id=viewer.thread.id,
            asked_at=now,
            asked_after_message=message_id,
        )
        await ops.notes.add_clarification(item)

    async def bound(
        self, viewer: Viewer, *, message_id: int | None, reply_to_text: str | None
    ) -> Clarification | None:
        """The asked question this message may answer, if any; expires old ones."""
        ops = self.ops
        item = await ops.notes.asked_clarification(viewer)
        if item is None:
            return None
        now = ops.clock.now()
        asked_at = item.asked_at or item.created_at
        if now - asked_at > timedelta(days=CLARIFICATION_TTL_DAYS):
            await ops.notes.set_clarification_status(item.id, "expired", now)
            return None
        if reply_to_text is not None and item.question.strip() in reply_to_text:
            return item
        if item.asked_thread_id not in (None, viewer.thread.id):
            return None
        if now - asked_at > timedelta(seconds=CLARIFICATION_NEXT_MESSAGE_SECONDS):
            return None
        if await self._spoke_since(viewer, item, message_id):
            return None
        return item

    async def _spoke_since(
        self, viewer: Viewer, item: Clarification, message_id: int | None
    ) -> bool:
        """Whether the person said something in the thread after the question and before
        this message (then this one is not their next message)."""
        if item.asked_after_message is None or message_id is None:
            return False
        after, current = item.asked_after_message, message_id
        since = (item.asked_at or item.created_at) - SPOKE_SINCE_MARGIN
        return any(
            m.role is Role.USER
            and m.user_id == viewer.user_id
            and m.telegram_message_id is not None
            and after < m.telegram_message_id < current
            for m in await self.ops.journal.recent(viewer.thread.id, limit=50, since=since)
        )

    async def answer(
        self,
        viewer: Viewer,
        text: str,
        *,
        speaker: Person | None = None,
        message_id: int | None = None,
        journal_id: str = "",
        reply_to_text: str | None = None,
    ) -> str | None:
        """Resolve the question this message is bound to, if it is a short answer: what
        to tell the person, or ``None`` (not an answer: the message is handled as any
        other)."""
        item = await self.bound(viewer, message_id=message_id, reply_to_text=reply_to_text)
        body = short(text)
        if item is None or body is None:
            return None
        ops = self.ops
        now = ops.clock.now()
        if item.kind == "ambiguous_reference":
            definite = whose(item.reference or "", body) if item.reference else None
            if definite is None or speaker is None or not item.proposed_content:
                return None
            pattern = re.compile(rf"(?<!\w){re.escape(item.reference or '')}(?!\w)", re.I)
            payload = pattern.sub(definite, item.proposed_content, count=1)
            stored = await ops.remember(viewer.thread, speaker, payload, journal_id)
            await ops.notes.set_clarification_status(item.id, "resolved", now)
            return stored.text
        if (
            NO.match(body)
            and item.kind == "contradiction"
            and item.fact_id
            and item.proposed_content
        ):
            # Not changed: the newer statement was wrong; restore the older one.
            new = await ops.facts.get(item.fact_id)
            old = await ops.facts.get(item.proposed_content)
            if new is not None:
                await ops.facts.invalidate(
                    new.id, at=now, reason="the person said it had not changed"
                )
            if old is not None:
                await ops.writer.add(
                    old.content,
                    old.partition,
                    category=old.category,
                    importance=old.importance,
                    provenance=old.provenance,
                )
            await ops.notes.set_clarification_status(item.id, "resolved", now)
            return "Thanks — I'll keep remembering it the way it was."
        if YES.match(body):
            await ops.notes.set_clarification_status(item.id, "resolved", now)
            return "Thanks — I've updated what I remember."
        return None
