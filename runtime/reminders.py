"""Wiring reminders: the Mongo store, the directory and, when there is one, the queue.

Without a queue (a bare test world, a replay whose clock is simulated, so arq's
real-time deferral cannot be used) nothing is deferred: the every-minute sweep finds
due reminders in MongoDB and queues them, which is also how a lost job is recovered.
"""

from __future__ import annotations

from datetime import datetime

from integrations.mongo.reminders import MongoReminders
from integrations.redis.queue import JobQueue
from memory.reminders import ReminderScheduler
from runtime.bundle import Services
from services.reminders import Reminders


def build_reminders(services: Services, scheduler: ReminderScheduler | None = None) -> Reminders:
    """The reminder use cases on this deployment's database (and ``scheduler``)."""
    store = MongoReminders(services.mongo.db)
    return Reminders(
        store, services.directory, services.clock, scheduler, time_zones=services.time_zones
    )


class QueueScheduler:
    """:class:`memory.reminders.ReminderScheduler` on the arq queue."""

    def __init__(self, queue: JobQueue) -> None:
        self.queue = queue

    async def schedule(self, reminder_id: str, occurrence: datetime) -> None:
        await self.queue.schedule_reminder(reminder_id, occurrence)
