"""Reminders: what one is, and the ports that store, schedule and deliver them.

A reminder is not a memory: it never becomes a fact, a note or a summary and never
enters the chat model's context. It carries the same privacy partition as a memory
(a DM's reminder is that person's, a group's is the circle's or one member's), so the
one visibility rule (:mod:`memory.privacy`) decides where it can be listed or changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from pydantic import BaseModel, Field

from memory.models import Partition, Viewer


class ReminderState(StrEnum):
    """``scheduled`` → ``sending`` (claimed by one delivery) → ``sent`` for a one-off, or
    back to ``scheduled`` with its next occurrence for a repetition."""

    SCHEDULED = "scheduled"
    SENDING = "sending"
    SENT = "sent"
    DONE = "done"
    CANCELLED = "cancelled"
    #: Telegram refused it for good (the bot was blocked or removed from the chat).
    UNDELIVERABLE = "undeliverable"


class Delivery(BaseModel):
    occurrence: datetime
    sent_at: datetime
    message_id: int | None = None
    late: bool = False
    #: When someone pressed "Done" under this occurrence's message (a repetition keeps
    #: going: "Done" closes one occurrence, cancelling closes the series).
    done_at: datetime | None = None
    done_by: str | None = None


class Reminder(BaseModel):
    """One reminder, stored before it is scheduled."""

    id: str
    text: str
    partition: Partition
    creator_id: str
    #: The person it is for (mentioned in a group), or None for "remind us".
    for_user_id: str | None
    thread_id: str
    chat_id: int
    #: The repetition (an rrule without DTSTART), counted from ``start``.
    rule: str | None = None
    start: datetime
    zone: str | None = None
    next_due: datetime
    state: ReminderState = ReminderState.SCHEDULED
    sending_at: datetime | None = None
    deliveries: list[Delivery] = Field(default_factory=list)
    #: Telegram message of the latest delivery (a reply or a button press names it).
    last_message_id: int | None = None
    #: The message that cancelled it ("chat:message"): the replay of that message (a
    #: first try that cancelled it and then failed) finds it and says so again.
    cancelled_by: str | None = None
    created_at: datetime

    def to_doc(self) -> dict[str, Any]:
        data = self.model_dump(mode="python", exclude={"partition"})
        data["_id"] = data.pop("id")
        data.update(self.partition.as_fields())
        return data

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Reminder:
        data = dict(doc)
        data["id"] = data.pop("_id")
        data["partition"] = Partition.from_fields(data)
        return cls.model_validate(data)


class ReminderStore(Protocol):
    """Where reminders live (MongoDB): the record of truth the queue is rebuilt from."""

    async def insert(self, reminder: Reminder) -> bool:
        """Store ``reminder``; False when one of its id is stored already (the replay of
        the message that created it)."""
        ...

    async def get(self, reminder_id: str) -> Reminder | None: ...

    async def visible(self, viewer: Viewer, *, cancelled_by: str | None = None) -> list[Reminder]:
        """The active reminders ``viewer`` may see, soonest first (the privacy filter in
        the query); with ``cancelled_by``, also those that message cancelled."""
        ...

    async def claim(
        self, reminder_id: str, occurrence: datetime, now: datetime, stuck_before: datetime
    ) -> Reminder | None:
        """Mark ``occurrence`` ``sending`` at ``now`` if it is still scheduled (or its
        claim is older than ``stuck_before``); None if it is not."""
        ...

    async def sent(
        self, reminder_id: str, delivery: Delivery, next_due: datetime | None
    ) -> None: ...

    async def reschedule(
        self, reminder_id: str, due: datetime, *, start: datetime | None = None
    ) -> None:
        """Due next at ``due`` (scheduled again); with ``start``, a repetition's series
        moves too (its rule is counted from the new start)."""
        ...

    async def mark_done(
        self, reminder_id: str, message_id: int, by_user_id: str, at: datetime
    ) -> None:
        """Record "Done" on the occurrence delivered as ``message_id``."""
        ...

    async def set_state(
        self, reminder_id: str, state: ReminderState, *, by: str | None = None
    ) -> None:
        """Move it to ``state``; ``by`` names the message that cancelled it."""
        ...

    async def due(self, now: datetime, stuck_before: datetime) -> list[Reminder]:
        """Scheduled reminders due by ``now``, and ``sending`` ones claimed before
        ``stuck_before`` (their process died before recording the delivery)."""
        ...

    async def by_message(self, chat_id: int, message_id: int) -> Reminder | None: ...

    async def delete_for(self, user_id: str) -> int:
        """Delete the reminders ``user_id`` created and those for them; how many."""
        ...


class ReminderScheduler(Protocol):
    """The job queue's side: one deferred delivery job per occurrence, with an id that
    makes queueing it twice a no-op."""

    async def schedule(self, reminder_id: str, occurrence: datetime) -> None: ...


class Undeliverable(Exception):
    """The chat refuses the bot for good (blocked, removed, chat gone): retrying is useless."""


@dataclass(frozen=True)
class Mention:
    """A person named at the start of a group delivery who has no @username: Telegram
    links the name to them (a ``text_mention`` entity) so they are notified all the same.
    ``length`` counts UTF-16 code units, as Telegram's entity offsets do."""

    telegram_user_id: int
    name: str

    @property
    def length(self) -> int:
        return len(self.name.encode("utf-16-le")) // 2


class ReminderSender(Protocol):
    """Telegram's side: send a reminder message with its buttons; the message id. Raises
    :class:`Undeliverable` when the chat refuses the bot for good. ``mention``: the text
    starts with that person's name, to be linked to them."""

    async def send(
        self,
        chat_id: int,
        text: str,
        *,
        reminder_id: str,
        to_user_id: str | None,
        mention: Mention | None = None,
    ) -> int | None: ...


def job_id(reminder_id: str, occurrence: datetime) -> str:
    """The delivery job's id: one per occurrence, so a requeue is refused while it waits."""
    return f"reminder:{reminder_id}:{int(occurrence.timestamp())}"
