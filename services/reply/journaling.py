"""A turn's journal writes: the incoming message, with the thread's update, and Alfred's
replies. Kept apart from the decisions in :mod:`services.reply.assistant` because their
rules are about storage: what is written together, under which id, in which partition."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from memory.models import Message, Role, SessionTick, Thread, Viewer
from memory.ports import Clock
from memory.stores import DirectoryStore, JournalStore, TouchWrite
from services.messages import Incoming, Outgoing, SentReply


@dataclass
class IncomingEntry:
    """An incoming message's journal writes (its insert and the thread's update), sent
    when :meth:`send` is first called. A reply the model answers sends them as it asks
    the model, after the turn's reads: the database writes while the model thinks,
    instead of before the reads the reply waits on."""

    tick: SessionTick
    message: Message
    journal: JournalStore
    touch: TouchWrite
    _sent: asyncio.Future[bool] | None = field(default=None, repr=False)

    def send(self) -> asyncio.Future[bool]:
        """Start the writes (once)."""
        if self._sent is None:
            self._sent = asyncio.ensure_future(self._write())
        return self._sent

    async def sent(self) -> None:
        """Start the writes and let them reach the database before going on: the model
        client's own work (the prompt, the SDK) would otherwise hold the event loop
        first. Two turns of the loop: one starts the writes, one sends both commands
        (the thread's update and the insert start side by side)."""
        self.send()
        for _ in range(2):
            await asyncio.sleep(0)

    async def written(self) -> bool:
        """Send the writes if not yet sent and wait for them: False when the message was
        journaled before (a redelivery). Their failure is raised here."""
        return await self.send()

    async def _write(self) -> bool:
        stored: list[bool] = []

        async def journal(_: SessionTick) -> None:  # sent with the thread's update
            stored.append(await self.journal.append(self.message))

        await self.touch(journal)
        return stored[0]


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
        entry = await self.open(inc, thread, viewer, text)
        return entry.tick, await entry.written()

    async def open(self, inc: Incoming, thread: Thread, viewer: Viewer, text: str) -> IncomingEntry:
        """``inc``'s session tick and its journal writes, not yet sent
        (:class:`IncomingEntry`)."""
        now = self.clock.now()
        tokens = max(1, len(text) // 4)
        tick, touch = await self.directory.prepare_touch(
            thread.id, now, tokens, message_id=inc.journal_id
        )
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
        return IncomingEntry(tick, message, self.journal, touch)

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
