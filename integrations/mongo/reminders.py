"""Reminders in MongoDB: the record of truth the job queue is rebuilt from.

One document per reminder (``_id`` its id) with the flat partition fields, so the
privacy filter of :mod:`memory.privacy` applies to it unchanged. A delivery claims an
occurrence with one conditional update (``scheduled`` → ``sending``, only for that
``next_due``), so two jobs for the same occurrence never both send it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from pymongo import ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from integrations.mongo.visible_reads import visible_documents
from memory.models import Viewer
from memory.reminders import Delivery, Reminder, ReminderState

#: The collection (migrations 9 and 13 index it).
REMINDERS: Final = "reminders"
_ACTIVE = [ReminderState.SCHEDULED.value, ReminderState.SENDING.value, ReminderState.SENT.value]


class MongoReminders:
    """:class:`memory.reminders.ReminderStore` on MongoDB."""

    def __init__(self, db: AsyncDatabase[dict[str, Any]]) -> None:
        self.col = db[REMINDERS]

    async def insert(self, reminder: Reminder) -> bool:
        try:
            await self.col.insert_one(reminder.to_doc())
        except DuplicateKeyError:
            return False
        return True

    async def get(self, reminder_id: str) -> Reminder | None:
        doc = await self.col.find_one({"_id": reminder_id})
        return Reminder.from_doc(doc) if doc else None

    async def visible(self, viewer: Viewer, *, cancelled_by: str | None = None) -> list[Reminder]:
        # One read per arm of the filter, from the partition index (a find of the filter
        # and the states under one $and made the embedded server read every reminder).
        query: dict[str, Any] = {"state": {"$in": _ACTIVE}}
        if cancelled_by is not None:
            cancelled = {"state": ReminderState.CANCELLED.value, "cancelled_by": cancelled_by}
            query = {"$or": [query, cancelled]}
        found = await visible_documents(self.col, viewer, query, sort=[("next_due", 1)])
        return [Reminder.from_doc(d) for d in found]

    async def claim(
        self, reminder_id: str, occurrence: datetime, now: datetime, stuck_before: datetime
    ) -> Reminder | None:
        doc = await self.col.find_one_and_update(
            {
                "_id": reminder_id,
                "next_due": occurrence,
                "$or": [
                    {"state": ReminderState.SCHEDULED.value},
                    # a delivery whose process died before it recorded the send
                    {"state": ReminderState.SENDING.value, "sending_at": {"$lt": stuck_before}},
                ],
            },
            {"$set": {"state": ReminderState.SENDING.value, "sending_at": now}},
            return_document=ReturnDocument.AFTER,
        )
        return Reminder.from_doc(doc) if doc else None

    async def sent(self, reminder_id: str, delivery: Delivery, next_due: datetime | None) -> None:
        update: dict[str, Any] = {
            "$push": {"deliveries": delivery.model_dump()},
            "$set": {"last_message_id": delivery.message_id, "sending_at": None},
        }
        if next_due is None:
            update["$set"]["state"] = ReminderState.SENT.value
        else:
            update["$set"].update(state=ReminderState.SCHEDULED.value, next_due=next_due)
        await self.col.update_one({"_id": reminder_id}, update)

    async def reschedule(
        self, reminder_id: str, due: datetime, *, start: datetime | None = None
    ) -> None:
        fields: dict[str, Any] = {
            "next_due": due,
            "state": ReminderState.SCHEDULED.value,
            "sending_at": None,
        }
        if start is not None:
            fields["start"] = start
        await self.col.update_one({"_id": reminder_id}, {"$set": fields})

    async def mark_done(
        self, reminder_id: str, message_id: int, by_user_id: str, at: datetime
    ) -> None:
        await self.col.update_one(
            {"_id": reminder_id, "deliveries.message_id": message_id},
            {"$set": {"deliveries.$.done_at": at, "deliveries.$.done_by": by_user_id}},
        )

    async def set_state(
        self, reminder_id: str, state: ReminderState, *, by: str | None = None
    ) -> None:
        change: dict[str, Any] = {"state": state.value}
        if by is not None:
            change["cancelled_by"] = by
        await self.col.update_one({"_id": reminder_id}, {"$set": change})

    async def due(self, now: datetime, stuck_before: datetime) -> list[Reminder]:
        cursor = self.col.find(
            {
                "$or": [
                    {"state": ReminderState.SCHEDULED.value, "next_due": {"$lte": now}},
                    {"state": ReminderState.SENDING.value, "sending_at": {"$lt": stuck_before}},
                ]
            }
        ).sort("next_due", 1)
        return [Reminder.from_doc(d) async for d in cursor]

    async def by_message(self, chat_id: int, message_id: int) -> Reminder | None:
        doc = await self.col.find_one({"chat_id": chat_id, "deliveries.message_id": message_id})
        return Reminder.from_doc(doc) if doc else None

    async def delete_for(self, user_id: str) -> int:
        result = await self.col.delete_many(
            {"$or": [{"creator_id": user_id}, {"for_user_id": user_id}]}
        )
        return int(result.deleted_count)
