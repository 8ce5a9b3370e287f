"""Reminders, the use cases: set, list, cancel, move, snooze, deliver and sweep.

A reminder is written to MongoDB first and then scheduled on the job queue (one
deferred job per occurrence, with an id that makes queueing it twice a no-op). The
every-minute sweep queues anything due whose job was lost (a dead Redis, a restart,
a killed worker), so those delay a reminder by at most a minute. A delivery is recorded
``sending`` before the message goes out and ``sent`` after: only a process that dies
between Telegram's answer and that record can send one twice.

Everything a person can see or change goes through the privacy rule
(:func:`memory.privacy.visibility_filter` in the query, :func:`memory.privacy.is_visible`
again on each result): a DM's reminders in that DM, the group's in the group.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from memory.ids import derived_id, new_id
from memory.models import Partition, ThreadKind, User, Viewer
from memory.ports import Clock
from memory.privacy import is_visible
from memory.reminders import (
    Delivery,
    Mention,
    Reminder,
    ReminderScheduler,
    ReminderSender,
    ReminderState,
    ReminderStore,
    Undeliverable,
)
from memory.rules.intents.remind import (
    CancelReminder,
    ListReminders,
    MoveReminder,
    ReminderIntent,
    SetReminder,
    Snooze,
)
from memory.stores import DirectoryStore
from services.reminder_time import (
    next_occurrence,
    parse_when,
    spoken,
    spoken_rule,
    time_of_day,
    zone_for,
)
from services.timezones import TimeZones

log = logging.getLogger(__name__)

#: More than this past due when sent, a reminder says "(late)".
LATE_AFTER = timedelta(minutes=1)
#: A delivery claimed this long ago and never recorded is taken to have died.
STUCK_AFTER = timedelta(minutes=2)
NOT_UNDERSTOOD = (
    'I couldn\'t tell when to remind you. Try e.g. "remind me to call the vet tomorrow at 9".'
)


class NoScheduler:
    """No queue (a bare test world, a replay on a simulated clock): the sweep delivers."""

    async def schedule(self, reminder_id: str, occurrence: datetime) -> None:
        return None


@dataclass
class SweepReport:
    queued: int = 0


class Reminders:
    """The reminder use cases, on ports only."""

    def __init__(
        self,
        store: ReminderStore,
        directory: DirectoryStore,
        clock: Clock,
        scheduler: ReminderScheduler | None = None,
        time_zones: TimeZones | None = None,
    ) -> None:
        self.store = store
        self.directory = directory
        self.clock = clock
        self.scheduler: ReminderScheduler = scheduler or NoScheduler()
        #: The person's own zone, else their calendar's, else the circle's, else UTC
        #: (None: only the zone stored on the user record, else UTC).
        self.time_zones = time_zones

    def _now(self) -> datetime:
        return self.clock.now()

    # --- a message's request -----------------------------------------------------------

    async def handle(
        self,
        viewer: Viewer,
        chat_id: int,
        intent: ReminderIntent,
        reply_to_message_id: int | None = None,
        *,
        source: str | None = None,
    ) -> str:
        """Alfred's answer to one reminder request; ``source`` names the message that
        asked (see :meth:`create`)."""
        if isinstance(intent, SetReminder):
            return await self.create(viewer, chat_id, intent, source=source)
        if isinstance(intent, ListReminders):
            return await self.listing(viewer)
        if isinstance(intent, CancelReminder):
            return await self.cancel(viewer, intent.about, source=source)
        if isinstance(intent, MoveReminder):
            return await self.move(viewer, intent.about, intent.when)
        if isinstance(intent, Snooze):
            return await self.snooze(viewer, chat_id, reply_to_message_id, intent.minutes)
        raise TypeError(intent)

    async def create(
        self, viewer: Viewer, chat_id: int, intent: SetReminder, *, source: str | None = None
    ) -> str:
        """Set a reminder. One asked for by a message (``source``, its "chat:message")
        is named after it: the replay of a message whose first try set it and then failed
        finds it, rather than setting it twice (nobody wants two reminders of one ask)."""
        thread, now = viewer.thread, self._now()
        if not intent.when:
            whom = {"me": "you", "us": "everyone"}.get(intent.who, intent.who.capitalize())
            return (
                f"When should I remind {whom} to {intent.task}? Say e.g. "
                f'"remind me to {intent.task} tomorrow at 9".'
            )
        for_user: str | None = viewer.user_id
        if intent.who == "us":
            if thread.kind is not ThreadKind.GROUP:
                return "I can remind everyone only in the group. Here I can remind you."
            for_user, partition = None, Partition.circle(thread.group_circle_id)
        elif intent.who != "me":
            if thread.kind is not ThreadKind.GROUP:
                return "I can remind someone else only in your group, where they can see it."
            named = await self._member_named(thread.group_circle_id, intent.who)
            if not named:
                return f"I don't know {intent.who.capitalize()} in this group."
            if len(named) > 1:
                both = " and ".join(sorted(u.name for u in named))
                return (
                    f"More than one person here is called {intent.who.capitalize()} ({both}), "
                    "so I can't tell whom to remind. Name them by their @username if they have one."
                )
            for_user = named[0].id
            partition = Partition.member(thread.group_circle_id, for_user)
        else:
            partition = thread.partition_for(viewer.user_id)
        note: str | None = None
        if self.time_zones is not None:
            if for_user is None or for_user == viewer.user_id:
                resolved = await self.time_zones.zone_for(viewer)
                note = await self.time_zones.fallback_note(viewer, resolved)
            else:
                resolved = await self.time_zones.zone_of(
                    for_user, group_circle_id=thread.group_circle_id
                )
            zone_name: str | None = resolved.name
        else:  # no time zones wired (a bare world): UTC
            zone_name = None
        zone = zone_for(zone_name)
        when = parse_when(intent.when, now, zone)
        if when is None or when.due <= now - LATE_AFTER:
            return NOT_UNDERSTOOD
        reminder_id = (
            derived_id("reminder", source, intent.who, intent.task, intent.when)
            if source is not None
            else new_id()
        )
        reminder = Reminder(
            id=reminder_id,
            text=intent.task,
            partition=partition,
            creator_id=viewer.user_id,
            for_user_id=for_user,
            thread_id=thread.id,
            chat_id=chat_id,
            rule=when.rule,
            start=when.due,
            zone=zone_name,
            next_due=when.due,
            created_at=now,
        )
        # The record first: the queue can be rebuilt from it (the sweep queues what a
        # failed try stored and never scheduled).
        due, rule = when.due, when.rule
        if await self.store.insert(reminder):
            await self._schedule(reminder.id, reminder.next_due)
        elif (kept := await self.store.get(reminder.id)) is not None:
            due, rule = kept.start, kept.rule  # "in ten minutes" counts from the first try
        whom = await self._whom(viewer, for_user)
        if rule:
            first = spoken(due, zone, now)
            said = f"{spoken_rule(rule, due, zone)} (first {first})"
        else:
            said = spoken(due, zone, now)
        confirmed = f"I'll remind {whom} {said}: {intent.task}."
        return f"{confirmed} {note}" if note else confirmed

    async def _member_named(self, circle_id: str, who: str) -> list[User]:
        """The circle's members ``who`` names: by @username if one has it, else by first
        (or full) name, since many people never set a Telegram username."""
        members = await self.directory.members(circle_id)
        by_username = [u for u in members if (u.username or "").lower() == who]
        if by_username:
            return by_username
        return [
            u
            for u in members
            if u.name.lower() == who or (u.name.lower().split() or [""])[0] == who
        ]

    async def _whom(self, viewer: Viewer, for_user: str | None) -> str:
        if for_user is None:
            return "everyone here"
        if for_user == viewer.user_id:
            return "you"
        user = await self.directory.user(for_user)
        return user.name if user else "them"

    async def _schedule(self, reminder_id: str, due: datetime) -> None:
        try:
            await self.scheduler.schedule(reminder_id, due)
        except Exception as exc:  # the sweep queues it within a minute
            log.warning("reminder %s not queued (the sweep will): %r", reminder_id, exc)

    async def _visible(self, viewer: Viewer, *, cancelled_by: str | None = None) -> list[Reminder]:
        found = await self.store.visible(viewer, cancelled_by=cancelled_by)
        return [r for r in found if is_visible(r.partition, viewer)]

    async def _describe(self, r: Reminder) -> str:
        zone = zone_for(r.zone)
        if r.state is not ReminderState.SCHEDULED:
            when = "delivered"
        elif r.rule:
            rule = spoken_rule(r.rule, r.next_due, zone)
            when = f"{rule}, next {spoken(r.next_due, zone, self._now())}"
        else:
            when = spoken(r.next_due, zone, self._now())
        return f"{r.text} — {when}"

    async def listing(self, viewer: Viewer) -> str:
        mine = [r for r in await self._visible(viewer) if r.state is ReminderState.SCHEDULED]
        if not mine:
            return "There are no reminders set here."
        lines = [f"{i}. {await self._describe(r)}" for i, r in enumerate(mine, 1)]
        return "Reminders here:\n" + "\n".join(lines)

    async def _find(
        self, viewer: Viewer, about: str, *, cancelled_by: str | None = None
    ) -> list[Reminder]:
        words = [w for w in re.findall(r"\w+", about.lower()) if w not in {"the", "my", "our", "a"}]
        found = []
        for r in await self._visible(viewer, cancelled_by=cancelled_by):
            text = r.text.lower()
            if words and all(re.search(rf"\b{re.escape(w)}", text) for w in words):
                found.append(r)
        return found

    async def cancel(self, viewer: Viewer, about: str, *, source: str | None = None) -> str:
        """Cancel the reminders here about ``about``. ``source`` names the message that
        asked: its replay (a first try that cancelled them and then failed) finds them
        cancelled by it, and answers as the first try would have."""
        found = await self._find(viewer, about, cancelled_by=source)
        if not found:
            return f'I found no reminder about "{about}" here.'
        for r in found:
            if r.state is not ReminderState.CANCELLED:
                await self.store.set_state(r.id, ReminderState.CANCELLED, by=source)
        names = "; ".join(r.text for r in found)
        return f"Cancelled: {names}."

    async def move(self, viewer: Viewer, about: str, when_text: str) -> str:
        found = await self._find(viewer, about)
        if not found:
            return f'I found no reminder about "{about}" here.'
        if len(found) > 1:
            names = "; ".join(r.text for r in found)
            return f'More than one reminder here is about "{about}" ({names}): say which.'
        r, now = found[0], self._now()
        zone = zone_for(r.zone)
        if r.rule:
            return await self._move_series(r, when_text, zone, now)
        phrase = (
            f"at {when_text}" if re.fullmatch(r"\d{1,2}(:\d\d)?", when_text.strip()) else when_text
        )
        when = parse_when(phrase, now, zone)
        if when is None or when.rule:
            return NOT_UNDERSTOOD
        if re.fullmatch(r"at \d{1,2}(:\d\d)?", phrase) and r.next_due > now:
            # "move it to 10": the same day as before, at 10
            local = r.next_due.astimezone(zone)
            moved = when.due.astimezone(zone)
            candidate = local.replace(hour=moved.hour, minute=moved.minute)
            if candidate.astimezone(now.tzinfo) > now:
                when = type(when)(candidate.astimezone(now.tzinfo))
        await self.store.reschedule(r.id, when.due)
        await self._schedule(r.id, when.due)
        return f"Moved: {r.text}, now {spoken(when.due, zone, now)}."

    async def _move_series(self, r: Reminder, when_text: str, zone: tzinfo, now: datetime) -> str:
        """A repetition moves to another time of day and keeps its rule: "move the bins
        reminder to 8pm" makes every later occurrence 20:00 local."""
        rule = r.rule or ""
        clock = time_of_day(when_text)
        if clock is None:
            return (
                f"{r.text.capitalize()} repeats ({spoken_rule(rule, r.next_due, zone)}): I can "
                'move it to another time of day, e.g. "move the reminder to 8pm". To change '
                "its days, cancel it and set it again."
            )
        hour, minute = clock
        start = r.start.astimezone(zone).replace(hour=hour, minute=minute).astimezone(UTC)
        due = next_occurrence(rule, zone, start, now)
        last = r.deliveries[-1].occurrence.astimezone(zone).date() if r.deliveries else None
        if due is not None and due.astimezone(zone).date() == last:
            due = next_occurrence(rule, zone, start, due)  # today's was already delivered
        if due is None:
            return f"{r.text.capitalize()} has no occurrence left to move."
        await self.store.reschedule(r.id, due, start=start)
        await self._schedule(r.id, due)
        series = spoken_rule(rule, due, zone)
        return f"Moved: {r.text}, now {series} (next {spoken(due, zone, now)})."

    async def snooze(
        self, viewer: Viewer, chat_id: int, message_id: int | None, minutes: int
    ) -> str:
        r = await self.store.by_message(chat_id, message_id) if message_id else None
        if r is None or not is_visible(r.partition, viewer):
            return "Reply to one of my reminders to snooze it."
        due = self._now() + timedelta(minutes=minutes)
        await self.store.reschedule(r.id, due)
        await self._schedule(r.id, due)
        return f"Snoozed for {minutes} minutes: {r.text}."

    async def press(self, viewer: Viewer, chat_id: int, message_id: int, button: str) -> str:
        """A button under a delivered reminder: ``done`` or ``snooze``."""
        if button == "snooze":
            return await self.snooze(viewer, chat_id, message_id, 10)
        r = await self.store.by_message(chat_id, message_id)
        if r is None or not is_visible(r.partition, viewer):
            return "That reminder is not here any more."
        if r.rule is None:
            await self.store.set_state(r.id, ReminderState.DONE)
            return f"Done: {r.text}."
        # a repetition: this occurrence is done, the series goes on (cancel stops it)
        now, zone = self._now(), zone_for(r.zone)
        await self.store.mark_done(r.id, message_id, viewer.user_id, now)
        regular = next_occurrence(r.rule, zone, r.start, now)
        on_rule = next_occurrence(r.rule, zone, r.start, r.next_due - timedelta(seconds=1))
        if regular is not None and on_rule != r.next_due:
            # a snooze of the occurrence just done is pending: it is not wanted any more
            await self.store.reschedule(r.id, regular)
            await self._schedule(r.id, regular)
            r.next_due = regular
        return f"Done: {r.text} (this time; next {spoken(r.next_due, zone, now)})."

    # --- the job queue's side ----------------------------------------------------------

    async def deliver(self, reminder_id: str, occurrence: datetime, sender: ReminderSender) -> bool:
        """Send one occurrence unless another delivery has it; then schedule the next."""
        now = self._now()
        r = await self.store.claim(reminder_id, occurrence, now, now - STUCK_AFTER)
        if r is None:  # delivered, cancelled, moved, or being sent right now
            return False
        late = now - occurrence > LATE_AFTER
        text, mention = await self._delivery_text(r, late)
        try:
            message_id = await sender.send(
                r.chat_id, text, reminder_id=r.id, to_user_id=r.for_user_id, mention=mention
            )
        except Undeliverable as exc:
            log.warning("reminder %s cannot be delivered: %s", r.id, type(exc).__name__)
            await self.store.set_state(r.id, ReminderState.UNDELIVERABLE)
            return False
        next_due = None
        if r.rule:
            next_due = next_occurrence(r.rule, zone_for(r.zone), r.start, now)
        delivery = Delivery(occurrence=occurrence, sent_at=now, message_id=message_id, late=late)
        await self.store.sent(r.id, delivery, next_due)
        if next_due is not None:
            await self._schedule(r.id, next_due)
        return True

    async def _delivery_text(self, r: Reminder, late: bool) -> tuple[str, Mention | None]:
        """The message, and who it links to: in a group, the person a reminder is for is
        named first — as @username when they have one, else by name with a link to
        their account (Telegram's ``text_mention``), so they are notified either way."""
        head = "⏰ (late) Reminder" if late else "⏰ Reminder"
        if r.partition.circle_id is not None and r.for_user_id is not None:
            user = await self.directory.user(r.for_user_id)
            if user is not None and user.username:
                return f"@{user.username} {head}: {r.text}", None
            if user is not None:
                mention = (
                    Mention(user.telegram_user_id, user.name)
                    if user.telegram_user_id is not None
                    else None
                )
                return f"{user.name} {head}: {r.text}", mention
        return f"{head}: {r.text}", None

    async def due(self) -> list[tuple[str, datetime]]:
        """What the sweep must see delivered: (id, occurrence) of each due reminder."""
        now = self._now()
        return [(r.id, r.next_due) for r in await self.store.due(now, now - STUCK_AFTER)]

    async def forget_person(self, user_id: str) -> int:
        return await self.store.delete_for(user_id)
