"""A turn's journal writes: the incoming message, with the thread's update, and Alfred's
replies. Kept apart from the decisions in :mod:`services.reply.assistant` because their
rules are about storage: what is written together, under which id, in which partition."""

from __future__ import annotations

from memory.models import Message, Role, SessionTick, Thread, Viewer
from memory.ports import Clock
from memory.stores import DirectoryStore, JournalStore
from services.messages import Incoming, Outgoing, SentReply


class TurnJournal:
    """Journals one turn's messages through the directory and journal ports."""

    def __init__(self, clock: Clock, directory: DirectoryStore, journal: JournalStore) -> None:
        self.clock = clock
        self.directory = directory
        self.journal = journal

    async def incoming(
        self, inc: Incoming, thread: Thread, viewer: Viewer, text: str
    ) -> tuple[SessionTick, bool]:
        """Journal ``inc``, said by ``viewer``, as ``text`` beside the thread's update (one
        round of writes); the session tick, and False when it was journaled before (a
        redelivery)."""
        now = self.clock.now()
        stored: list[bool] = []

        async def journal(tick: SessionTick) -> None:  # sent with the thread's update
            message = Message(
                id=inc.journal_id,
                thread_id=thread.id,
                partition=thread.partition_for(viewer.user_id),
                role=Role.USER,
                user_id=viewer.user_id,
                text=text,
                telegram_message_id=inc.message_id,
                session_id=tick.session_id,
                created_at=now,
            )
            stored.append(await self.journal.append(message))

        tokens = max(1, len(text) // 4)
        tick = await self.directory.touch(thread.id, now, tokens, alongside=journal)
        return tick, stored[0]

    def sent(self, inc: Incoming, replies: list[Outgoing]) -> tuple[SentReply, ...]:
        """``replies`` to ``inc`` as the journal will keep them: each under the message's
        id and its place (journaled twice, it is kept once), at the time they are sent."""
        now = self.clock.now()
        return tuple(
            SentReply(
                id=str(out.meta.get("journal_id") or f"{out.chat_id}:a:r{inc.message_id}:{place}"),
                text=str(out.meta.get("journal_text", out.text)),
                at=now,
            )
            for place, out in enumerate(replies)
        )

    async def reply(self, thread: Thread, viewer: Viewer, sent: SentReply) -> None:
        """Alfred's own words are journaled too (weighted 0.2 in formation), in the
        partition of the thread and the person it answered."""
        message = Message(
            id=sent.id,
            thread_id=thread.id,
            partition=thread.partition_for(viewer.user_id),
            role=Role.AGENT,
            user_id=None,
            text=sent.text,
            created_at=sent.at,
        )
        await self.journal.append(message)
