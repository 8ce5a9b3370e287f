"""A turn's journal writes: the incoming message, with the thread's update, and Alfred's
replies. Kept apart from the decisions in :mod:`services.reply.assistant` because their
rules are about storage: what is written together, under which id, in which partition."""

from __future__ import annotations

from memory.models import Message, Role, SessionTick, Thread, Viewer
from memory.ports import Clock
from memory.stores import DirectoryStore, JournalStore
from services.messages import Incoming, Outgoing


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

    async def reply(self, thread: Thread, viewer: Viewer, out: Outgoing, journal_id: str) -> None:
        """Alfred's own words are journaled too (weighted 0.2 in formation), in the
        partition of the thread and the person it answered."""
        message = Message(
            id=str(out.meta.get("journal_id") or journal_id),
            thread_id=thread.id,
            partition=thread.partition_for(viewer.user_id),
            role=Role.AGENT,
            user_id=None,
            text=str(out.meta.get("journal_text", out.text)),
            created_at=self.clock.now(),
        )
        await self.journal.append(message)
