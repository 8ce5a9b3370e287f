"""The memories Alfred derives from calendar events (seed 004 §18.3).

Events are normalised by :mod:`memory.calendar_events` and put into words by
:mod:`memory.calendar_wording`. :func:`derive_memories` is pure: given an event, the
owner's name and the addresses that must never become contacts, it returns what to
remember —

* ``relationship``: each named attendee, "Alice has a contact: Dr. Smith
  (dr.smith@example.com)". Never the owner, a circle member or a resource (room);
  attendees without a name are skipped (an address alone says little and is often a
  mailing list); big meetings (more than :data:`MAX_CONTACT_ATTENDEES` guests) and
  events that ended long ago (:data:`CONTACT_LOOKBACK`) give no contacts, so a full
  sync of a ten-year-old work calendar does not flood memory.
* ``context``: any event worth remembering, not only the seed's title patterns:
  "Alice has a meeting with X on Tuesday 10 March 2026 at 15:00 Europe/Paris", "Alice has
  dinner at Luigi's on …", "Alice is out of office from … to …", valid until the event
  ends (``expires_at``); a duty invalidates it then. Placeholders ("Busy", "Focus time",
  working-location entries) give nothing. The date is part of the wording, so each
  one-off event is its own fact and re-delivering an event dedups. A recurring series is
  ONE memory, worded by its rule ("Alice has therapy every Tuesday at 18:00
  Europe/Paris"), until its last occurrence ends, or, with no end date, for
  :data:`OPEN_SERIES_HORIZON` after it was last delivered.

Times are given in the owner's own time zone when they set one ("my time zone is …",
:mod:`memory.timezones`), else in the event's own, else the calendar's (Google's calendar
setting, which is the person's). Where the memories go (which partition) is not decided
here: that is the caller's (sync → the owner's DM; created from a group → that group).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memory.calendar_events import (
    DEFAULT_DURATION,
    CalendarEvent,
    EventAttendee,
    parse_event,
)
from memory.calendar_wording import (
    describe_recurrence,
    describe_when,
    event_phrase,
    is_out_of_office,
    local_day,
    series_end,
    shown_zone,
    title_phrase,
)
from memory.models import Category

__all__ = [
    "CONTACT_LOOKBACK",
    "DEFAULT_DURATION",
    "MAX_CONTACT_ATTENDEES",
    "OPEN_SERIES_HORIZON",
    "CalendarEvent",
    "DerivedMemory",
    "EventAttendee",
    "derive_memories",
    "describe_when",
    "is_person_address",
    "parse_event",
    "series_end",
    "title_phrase",
]

#: An event with more guests than this is a big meeting: its attendees are not contacts.
MAX_CONTACT_ATTENDEES = 10
#: Attendees of events that ended longer ago than this are not turned into contacts.
CONTACT_LOOKBACK = timedelta(days=365)
#: A recurring series with no end is taken as current for this long from when it was
#: (last) delivered: the sync re-derives it whenever the series changes (an edit, an end
#: date added, a cancellation), so this only bounds a series nobody keeps up to date any
#: more (a disconnected calendar, a replay) instead of remembering it for ever.
OPEN_SERIES_HORIZON = timedelta(days=180)
CONTACT_IMPORTANCE = 4
CONTEXT_IMPORTANCE = 6
#: Google entries that only say where someone works or that they are focusing.
_NOT_EVENTS = frozenset({"workingLocation", "focusTime"})

#: Addresses that are calendars or rooms, never people.
_NON_PERSON_DOMAINS = (
    "resource.calendar.google.com",
    "group.calendar.google.com",
    "group.v.calendar.google.com",
    "import.calendar.google.com",
)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
#: The words of a name or of an address's local part ("bob.jones-2" → bob, jones, 2).
_NAME_WORDS = re.compile(r"[^\W_]+")


class DerivedMemory(BaseModel):
    """A memory to store for an event: content, category, importance and expiry."""

    model_config = ConfigDict(frozen=True)

    content: str
    category: Category
    importance: int = Field(ge=1, le=10)
    kind: Literal["contact", "context"]
    #: When the memory stops being true (the event's end); None: until cancelled.
    expires_at: datetime | None = None


def _context(
    event: CalendarEvent, owner_name: str, now: datetime, zone: str | None = None
) -> DerivedMemory | None:
    if event.start is None or event.event_type in _NOT_EVENTS:
        return None
    if is_out_of_office(event):
        head = f"{owner_name} is out of office"
    else:
        phrase = event_phrase(event.title)
        if phrase is None:
            return None
        head = f"{owner_name} has {phrase}"
    recurring, last_end = series_end(event)
    if recurring:
        if last_end is not None and last_end <= now:
            return None
        how_often = describe_recurrence(event, zone)
        shown = shown_zone(event, zone)
        content = f"{head} {how_often}" if how_often else f"{head} regularly"
        if event.start > now:
            content += f", starting {local_day(event.start, shown)}"
        elif how_often is None:
            content += f", first {describe_when(event, zone)}"
        if last_end is not None:
            content += f", until {local_day(last_end, shown)}"
        return DerivedMemory(
            content=content,
            category=Category.CONTEXT,
            importance=CONTEXT_IMPORTANCE,
            kind="context",
            expires_at=last_end or max(now, event.start) + OPEN_SERIES_HORIZON,
        )
    end = event.effective_end
    if end is None or end <= now:
        return None  # over already: it would expire at once
    return DerivedMemory(
        content=f"{head} {describe_when(event, zone)}".strip(),
        category=Category.CONTEXT,
        importance=CONTEXT_IMPORTANCE,
        kind="context",
        expires_at=end,
    )


def is_person_address(email: str | None) -> bool:
    """Whether an attendee address can be a person (not a room, group or import)."""
    if not email or not _EMAIL.match(email):
        return False
    return not email.lower().endswith(_NON_PERSON_DOMAINS)


def _contacts(
    event: CalendarEvent,
    owner_name: str,
    excluded_emails: Collection[str],
    excluded_names: Collection[str],
    now: datetime,
) -> list[DerivedMemory]:
    if len(event.attendees) > MAX_CONTACT_ATTENDEES:
        return []
    end = event.effective_end
    recurring, _ = series_end(event)
    if not recurring and end is not None and end < now - CONTACT_LOOKBACK:
        return []
    emails = {e.lower() for e in excluded_emails}
    names = {n.casefold() for n in excluded_names} | {owner_name.casefold()}
    first_names = {_first_word(n) for n in names} - {""}
    out: list[DerivedMemory] = []
    seen: set[str] = set()
    for guest in event.attendees:
        email = guest.email
        if guest.is_self or guest.is_resource or email is None or not is_person_address(email):
            continue
        if email in emails or email in seen:
            continue
        name = guest.name
        if not name or name.lower() == email:
            continue
        if _may_be_one_of(name, email, names, first_names):
            continue
        seen.add(email)
        out.append(
            DerivedMemory(
                content=f"{owner_name} has a contact: {name} ({email})",
                category=Category.RELATIONSHIP,
                importance=CONTACT_IMPORTANCE,
                kind="contact",
            )
        )
    return out


def _first_word(name: str) -> str:
    """The first word of a folded name, if it can be a first name (two letters or more)."""
    words = _NAME_WORDS.findall(name.casefold())
    return words[0] if words and len(words[0]) >= 2 else ""


def _may_be_one_of(name: str, email: str, names: set[str], first_names: set[str]) -> bool:
    """Whether an attendee may be the owner or someone of the owner's circles, whose
    address Alfred does not know (only connected calendars tell it): the same name, the
    same first name ("Bob" in Telegram, "Bob Jones" in the invitation), or an address
    made of such a name ("bob.jones@…", a Telegram username). Erring this way loses a
    contact memory; erring the other way would store a partner as a contact."""
    folded = name.casefold()
    if folded in names or _first_word(folded) in first_names:
        return True
    local = email.split("@", 1)[0].casefold()
    return local in names or bool(set(_NAME_WORDS.findall(local)) & first_names)


def derive_memories(
    event: CalendarEvent,
    *,
    owner_name: str,
    now: datetime,
    excluded_emails: Collection[str] = (),
    excluded_names: Collection[str] = (),
    zone: str | None = None,
) -> list[DerivedMemory]:
    """The memories an event gives its owner (see the module docstring).

    ``zone`` is the owner's own time zone when they set one: times are then worded on
    their clock instead of the event's (:func:`memory.calendar_wording.shown_zone`).

    ``excluded_emails`` are addresses that must never become contacts: the owner's own
    and those of the people in the owner's circles. ``excluded_names`` likewise (circle
    members' names and usernames, for people invited under an address Alfred does not
    know; a first name or an address made of one is enough, see :func:`_may_be_one_of`).
    A cancelled event gives nothing.
    """
    if event.cancelled:
        return []
    memories = _contacts(event, owner_name, excluded_emails, excluded_names, now)
    context = _context(event, owner_name, now, zone)
    if context is not None:
        memories.append(context)
    return memories
