"""Turning calendar events into stored memories, in the right partition.

One path for the three sources of events — the periodic sync, an event created through
Alfred's tool, and the replay's ``calendar`` line — so they dedup, link and expire the
same way:

* partition (DESIGN.md §3): the sync's events are the owner's private knowledge → the
  owner's DM partition; an event created from a chat belongs to that chat: in a group,
  the member partition of whoever created it there; in a DM, that DM's. A thread an
  event cannot have come from — another person's DM, a group the owner or creator is not
  in — is refused (:class:`memory.errors.Denied`), whoever the caller is;
* facts go through :class:`memory.facts.FactWriter` (same normalising, embedding and
  unique (partition, hash) dedup as every other fact), with
  ``Provenance(source="calendar", calendar_event_id=…)``;
* each context fact is linked to its event with the time it stops being true;
  :func:`expire_calendar_memories` invalidates it then, and a cancelled or moved event
  invalidates its old context facts at once (in every partition: removing a memory
  reveals nothing, while re-wording the group's copy from a private edit would).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory.calendar_memories import CalendarEvent, DerivedMemory, derive_memories, parse_event
from memory.calendar_ports import CalendarStore, MemoryLink
from memory.errors import Denied
from memory.facts import clip_words
from memory.ids import content_hash
from memory.models import Category, Fact, Partition, Provenance, Thread, ThreadKind
from services.calendar.feature import CalendarFeature

log = logging.getLogger(__name__)


@dataclass
class DeliveryReport:
    """What delivering events did."""

    events: int = 0
    stored: int = 0
    already_known: int = 0
    invalidated: int = 0
    skipped: int = 0
    fact_ids: list[str] = field(default_factory=list)

    def add(self, other: DeliveryReport) -> None:
        self.events += other.events
        self.stored += other.stored
        self.already_known += other.already_known
        self.invalidated += other.invalidated
        self.skipped += other.skipped
        self.fact_ids += other.fact_ids


def event_partition(
    owner_user_id: str, from_thread: Thread | None, creator_user_id: str | None = None
) -> Partition:
    """Where memories of an event go: the owner's DM for the sync (``from_thread`` None),
    else the thread it was created in, as the creator's (DESIGN.md §3)."""
    if from_thread is None:
        return Partition.dm(owner_user_id)
    if from_thread.kind is ThreadKind.DM:
        return Partition.dm(from_thread.dm_user_id)
    return from_thread.partition_for(creator_user_id or owner_user_id)


class EventMemories:
    """Derives and stores the memories of one owner's events (batching for the sync)."""

    def __init__(
        self, calendar: CalendarFeature, owner_user_id: str, *, generation: int = 0
    ) -> None:
        self.calendar = calendar
        self.owner_user_id = owner_user_id
        self.generation = generation
        self.store: CalendarStore = calendar.store
        self.owner_name = owner_user_id
        self.excluded_emails: set[str] = set()
        self.excluded_names: set[str] = set()
        #: The owner's own time zone, when set: memories are worded on their clock.
        self.zone: str | None = None
        self._stored_contacts: set[tuple[str, str]] = set()

    async def prepare(self) -> EventMemories:
        """Read the owner's name and everyone who must never become a contact: the
        owner's own address and the people of every circle the owner is in."""
        d = self.calendar.directory
        if self.calendar.zones is not None:
            self.zone = await self.calendar.zones.user_zone(self.owner_user_id)
        owner = await d.user(self.owner_user_id)
        if owner is not None:
            self.owner_name = owner.name
        people = {self.owner_user_id}
        for circle in await d.circles_of(self.owner_user_id):
            people.update(circle.member_ids)
        users = await d.users(sorted(people))
        # Names and Telegram usernames: an attendee called either is taken for them.
        self.excluded_names = {u.name for u in users.values() if u.name} | {
            u.username for u in users.values() if u.username
        }
        for connection in await self.store.many(sorted(people)):
            email = await self.calendar.account_email(connection)
            if email:
                self.excluded_emails.add(email.lower())
        own = await self.store.get(self.owner_user_id)
        if own is not None and self.generation == 0:
            self.generation = own.generation
        return self

    async def deliver(
        self,
        raw_events: Iterable[Mapping[str, Any]],
        *,
        partition: Partition,
        thread_id: str | None = None,
        creator_user_id: str | None = None,
        default_zone: str | None = None,
    ) -> DeliveryReport:
        """Derive and store memories for a batch of events: one embedding call, and a
        handful of queries per batch, not per event (a sync page holds 250)."""
        report = DeliveryReport()
        now = self.calendar.clock.now()
        events: list[CalendarEvent] = []
        for raw in raw_events:
            report.events += 1
            try:
                event = parse_event(raw, default_zone=default_zone)
            except Exception:  # one unreadable event never stops a sync
                log.warning("calendar event skipped: unreadable")
                report.skipped += 1
                continue
            if not event.id:
                report.skipped += 1
                continue
            events.append(event)
        existing = await self.store.links_for_events(self.owner_user_id, [e.id for e in events])
        items: list[tuple[str, Category, int, Partition, Provenance]] = []
        expiry: list[tuple[str, datetime | None] | None] = []
        outdated: list[tuple[MemoryLink, str]] = []
        kept: list[str] = []
        for event in events:
            if event.cancelled:
                outdated += [
                    (link, "the event was cancelled") for link in existing.get(event.id, [])
                ]
                continue
            provenance = Provenance(
                thread_id=thread_id,
                speaker_id=creator_user_id,
                calendar_event_id=event.id,
                source="calendar",
            )
            hashes: set[str] = set()
            for memory in self._derive(event, now):
                # The writer clips facts to 30 words: hash what it will store.
                content = clip_words(memory.content)
                if memory.kind == "contact":
                    key = (partition.key(), content_hash(content))
                    if key in self._stored_contacts:
                        report.already_known += 1
                        continue
                    self._stored_contacts.add(key)
                    expiry.append(None)
                else:
                    hashes.add(content_hash(content))
                    expiry.append((event.id, memory.expires_at))
                items.append((content, memory.category, memory.importance, partition, provenance))
            for link in existing.get(event.id, []):
                if link.content_hash in hashes:
                    kept.append(link.id)
                else:
                    outdated.append((link, "the event changed"))
        stored = (
            await self.calendar.writer.add_many(items, subject_user_id=self.owner_user_id)
            if items
            else []
        )
        for (fact, new), link_to in zip(stored, expiry, strict=True):
            if new:
                report.stored += 1
                report.fact_ids.append(fact.id)
                await self._mirror(fact)
            else:
                report.already_known += 1
            if link_to is not None and fact.provenance.source == "calendar":
                event_id, expires_at = link_to
                await self.store.link(
                    fact_id=fact.id,
                    owner_user_id=self.owner_user_id,
                    event_id=event_id,
                    expires_at=expires_at,
                    content_hash=fact.hash,
                    generation=self.generation,
                    now=now,
                )
        report.invalidated += await self._invalidate(outdated)
        await self.store.set_generation(kept, self.generation)
        return report

    async def _mirror(self, fact: Fact) -> None:
        if self.calendar.mirror is None:
            return
        try:
            await self.calendar.mirror.mirror(fact)
        except Exception as exc:  # mem0 is optional; the fact is stored
            log.warning("mem0 mirror of a calendar fact failed: %s", type(exc).__name__)

    async def _invalidate(self, links: list[tuple[MemoryLink, str]]) -> int:
        """Invalidate the facts of outdated links (kept as history) and close the links."""
        now = self.calendar.clock.now()
        count = 0
        for link, reason in links:
            if await self.calendar.facts.invalidate(link.fact_id, at=now, reason=reason):
                count += 1
        await self.store.deactivate([link.id for link, _ in links], now)
        return count

    def _derive(self, event: CalendarEvent, now: datetime) -> list[DerivedMemory]:
        return derive_memories(
            event,
            owner_name=self.owner_name,
            now=now,
            excluded_emails=self.excluded_emails,
            excluded_names=self.excluded_names,
            zone=self.zone,
        )

    async def sweep_stale(self, generation: int) -> int:
        """After a complete full sync: context facts of events it did not see (deleted
        meanwhile, while the sync token had expired) are no longer true."""
        stale = await self.store.stale(self.owner_user_id, generation)
        return await self._invalidate([(link, "the event is gone") for link in stale])


async def deliver_event(
    calendar: CalendarFeature,
    owner_user_id: str,
    event: Mapping[str, Any],
    from_thread: Thread | None,
    *,
    creator_user_id: str | None = None,
    default_zone: str | None = None,
) -> DeliveryReport:
    """Remember what one event of ``owner_user_id``'s calendar says.

    ``from_thread`` is the chat the event was created in (an agent tool call, or the
    replay's ``"from"``), or None for an event found by the sync. ``creator_user_id`` is
    who asked for it in that chat (default: the owner). ``event`` is a Google Calendar
    v3 resource or the replay's flat shape. Idempotent: delivering it again stores
    nothing new; a cancelled event invalidates what it had given.
    """
    if from_thread is not None:
        await _check_thread(calendar, owner_user_id, from_thread, creator_user_id)
    memories = await EventMemories(calendar, owner_user_id).prepare()
    if from_thread is not None and from_thread.kind is ThreadKind.DM:
        creator_user_id = from_thread.user_id
    partition = event_partition(owner_user_id, from_thread, creator_user_id)
    if default_zone is None:
        connection = await memories.store.get(owner_user_id)
        default_zone = connection.time_zone if connection else None
    return await memories.deliver(
        [event],
        partition=partition,
        thread_id=from_thread.id if from_thread else None,
        creator_user_id=creator_user_id or owner_user_id,
        default_zone=default_zone,
    )


async def _check_thread(
    calendar: CalendarFeature, owner_user_id: str, thread: Thread, creator_user_id: str | None
) -> None:
    """Refuse a thread an event of ``owner_user_id`` cannot have come from: another
    person's DM (their partition would get the owner's private event), or a group the
    owner or the creator is not in. Raises :class:`Denied`."""
    if thread.kind is ThreadKind.DM:
        if thread.user_id != owner_user_id or creator_user_id not in (None, owner_user_id):
            raise Denied("a calendar event can only come from its owner's own private chat")
        return
    if thread.circle_id is None:
        raise Denied("a calendar event from a group needs the group's circle")
    members = {m.id for m in await calendar.directory.members(thread.circle_id)}
    if owner_user_id not in members or (creator_user_id or owner_user_id) not in members:
        raise Denied("a calendar event can only come from a group its owner and creator are in")


async def expire_calendar_memories(
    calendar: CalendarFeature, *, now: datetime | None = None
) -> int:
    """The duty: invalidate context facts of events that are over. Returns how many.

    "Alice has a meeting with Dr. Smith on Tuesday…" is true until the meeting ends;
    afterwards it is kept as history (``invalid_at``) and leaves retrieval.
    """
    store = calendar.store
    now = now or calendar.clock.now()
    total = 0
    while True:
        batch = await store.expired(now)
        if not batch:
            return total
        for link in batch:
            if await calendar.facts.invalidate(
                link.fact_id, at=now, reason="the calendar event is over"
            ):
                total += 1
        await store.deactivate([link.id for link in batch], now)
