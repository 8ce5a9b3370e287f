"""Calendar events, normalised, and the memories Alfred derives from them (seed 004 §18.3).

Events arrive in two shapes: Google Calendar v3 resources (``summary``, ``start.dateTime``
or ``start.date``, ``attendees[].displayName``) from the sync and the agent tools, and the
flat replay shape (``title``, ``start`` as a string, ``attendees[].name``, REPLAY.md).
:func:`parse_event` accepts both, so everything downstream deals with one
:class:`CalendarEvent`; it never raises on odd data (no title, all-day, recurring, no
attendee names, unknown time zones): a field it cannot read is left empty.

:func:`derive_memories` is pure: given an event, the owner's name and the addresses that
must never become contacts, it returns what to remember —

* ``relationship``: each named attendee, "Alice has a contact: Dr. Smith
  (dr.smith@example.com)". Never the owner, a circle member or a resource (room);
  attendees without a name are skipped (an address alone says little and is often a
  mailing list); big meetings (more than :data:`MAX_CONTACT_ATTENDEES` guests) and
  events that ended long ago (:data:`CONTACT_LOOKBACK`) give no contacts, so a full
  sync of a ten-year-old work calendar does not flood memory.
* ``context``: titles such as "meeting with X", "call with X", "X appointment" become
  "Alice has a meeting with X on Tuesday 10 March 2026 at 15:00 Europe/Paris", valid
  until the event ends (``expires_at``); a duty invalidates it then. The date is part of
  the wording, so each occurrence is its own fact and re-delivering an event dedups. A
  recurring series is one fact until its last occurrence ends, or, with no end date,
  for :data:`OPEN_SERIES_HORIZON` after it was last delivered.

Where the memories go (which partition) is not decided here: that is the caller's
(sync → the owner's DM; created from a group → that group).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field

from memory.models import Category

#: An event with more guests than this is a big meeting: its attendees are not contacts.
MAX_CONTACT_ATTENDEES = 10
#: Attendees of events that ended longer ago than this are not turned into contacts.
CONTACT_LOOKBACK = timedelta(days=365)
#: A timed event without an end lasts this long (Google requires an end; replays may not).
DEFAULT_DURATION = timedelta(hours=1)
#: A recurring series with no end is taken as current for this long from when it was
#: (last) delivered: the sync re-derives it whenever the series changes (an edit, an end
#: date added, a cancellation), so this only bounds a series nobody keeps up to date any
#: more (a disconnected calendar, a replay) instead of remembering it for ever.
OPEN_SERIES_HORIZON = timedelta(days=180)
#: Longest "X" kept from a title ("meeting with X"), in words and characters.
MAX_WHO_WORDS = 8
MAX_WHO_CHARS = 60
CONTACT_IMPORTANCE = 4
CONTEXT_IMPORTANCE = 6

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
_WHO_CUT = re.compile(r"\s+[-–—|]\s+|[:(\[{/|]|\s+(?:re|about|to discuss|regarding)\s+", re.I)
_EDGE = re.compile(r"^[\s\W_]+|[\s\W_]+$")


class EventAttendee(BaseModel):
    """One guest of an event, as far as the calendar tells."""

    model_config = ConfigDict(frozen=True)

    email: str | None = None
    name: str | None = None
    #: Google marks the calendar owner's own entry with ``self``.
    is_self: bool = False
    #: Rooms and equipment are attendees too in Google Calendar.
    is_resource: bool = False


class CalendarEvent(BaseModel):
    """An event, normalised from either input shape. Times are timezone-aware."""

    model_config = ConfigDict(frozen=True)

    id: str
    title: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    all_day: bool = False
    #: The IANA zone the event is shown in (its own, else the calendar's), when known.
    time_zone: str | None = None
    attendees: tuple[EventAttendee, ...] = ()
    cancelled: bool = False
    #: RRULE/EXDATE lines of a recurring series (the series itself, not one instance).
    recurrence: tuple[str, ...] = ()
    #: Set on one instance of a series that was changed or cancelled on its own.
    recurring_event_id: str | None = None

    @property
    def effective_end(self) -> datetime | None:
        """When the event is over: its end, or its start plus a default duration."""
        if self.end is not None:
            return self.end
        if self.start is None:
            return None
        return self.start + (timedelta(days=1) if self.all_day else DEFAULT_DURATION)


class DerivedMemory(BaseModel):
    """A memory to store for an event: content, category, importance and expiry."""

    model_config = ConfigDict(frozen=True)

    content: str
    category: Category
    importance: int = Field(ge=1, le=10)
    kind: Literal["contact", "context"]
    #: When the memory stops being true (the event's end); None: until cancelled.
    expires_at: datetime | None = None


# --- parsing ------------------------------------------------------------------------


def _zone(name: str | None) -> tzinfo | None:
    if not name or not isinstance(name, str):
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    cleaned = " ".join(value.split())
    return cleaned or None


def _parse_when(
    value: Any, default_zone: str | None
) -> tuple[datetime | None, bool | None, str | None]:
    """A start or end in either shape → (aware datetime, all-day?, zone name)."""
    zone_name: str | None = None
    raw: Any = value
    all_day: bool | None = None
    if isinstance(value, Mapping):
        zone_name = _text(value.get("timeZone"))
        if isinstance(value.get("dateTime"), str):
            raw, all_day = value["dateTime"], False
        elif isinstance(value.get("date"), str):
            raw, all_day = value["date"], True
        else:
            return None, None, zone_name
    if not isinstance(raw, str) or not raw.strip():
        return None, None, zone_name
    raw = raw.strip()
    zone_name = zone_name or default_zone
    zone = _zone(zone_name) or UTC
    if all_day is True or (all_day is None and re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw)):
        try:
            day = date.fromisoformat(raw)
        except ValueError:
            return None, None, zone_name
        return datetime.combine(day, time(0), tzinfo=zone), True, zone_name
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None, None, zone_name
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    return moment, False, zone_name


def _attendee(raw: Any) -> EventAttendee | None:
    if not isinstance(raw, Mapping):
        return None
    email = _text(raw.get("email"))
    name = _text(raw.get("displayName")) or _text(raw.get("name"))
    return EventAttendee(
        email=email.lower() if email else None,
        name=name,
        is_self=raw.get("self") is True,
        is_resource=raw.get("resource") is True,
    )


def parse_event(raw: Mapping[str, Any], *, default_zone: str | None = None) -> CalendarEvent:
    """Normalise a Google Calendar v3 event or a replay event.

    ``default_zone`` is the calendar's time zone, used for times given without an offset
    and for all-day dates. An event without an id gets an empty one (the caller decides).
    """
    start, start_all_day, start_zone = _parse_when(raw.get("start"), default_zone)
    end, _, end_zone = _parse_when(raw.get("end"), start_zone or default_zone)
    zone_name = start_zone or end_zone or default_zone
    if _zone(zone_name) is None:
        zone_name = None
    all_day = bool(start_all_day)
    if raw.get("allDay") is True or raw.get("all_day") is True:
        all_day = True
    if start is not None and end is not None and end <= start:
        end = None  # a broken end is ignored rather than trusted
    attendees = tuple(a for a in map(_attendee, raw.get("attendees") or ()) if a is not None)
    recurrence = tuple(r for r in (raw.get("recurrence") or ()) if isinstance(r, str))
    title = _text(raw.get("summary")) or _text(raw.get("title"))
    return CalendarEvent(
        id=str(raw.get("id") or ""),
        title=title,
        start=start,
        end=end,
        all_day=all_day,
        time_zone=zone_name,
        attendees=attendees,
        cancelled=raw.get("status") == "cancelled" or raw.get("cancelled") is True,
        recurrence=recurrence,
        recurring_event_id=_text(raw.get("recurringEventId")),
    )


# --- wording -------------------------------------------------------------------------


def _local(moment: datetime, zone_name: str | None) -> tuple[datetime, str]:
    zone = _zone(zone_name)
    if zone is not None:
        return moment.astimezone(zone), zone_name or "UTC"
    offset = moment.utcoffset() or timedelta(0)
    if offset == timedelta(0):
        return moment, "UTC"
    sign = "+" if offset >= timedelta(0) else "-"
    minutes = abs(int(offset.total_seconds())) // 60
    return moment, f"UTC{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def _day(moment: datetime) -> str:
    return f"{moment:%A} {moment.day} {moment:%B %Y}"


def describe_when(event: CalendarEvent) -> str:
    """When the event is, in words: "on Tuesday 10 March 2026 at 15:00 Europe/Paris"
    (all-day events without a time); empty when the start is unknown."""
    if event.start is None:
        return ""
    start, label = _local(event.start, event.time_zone)
    if not event.all_day:
        return f"on {_day(start)} at {start:%H:%M} {label}"
    end = event.effective_end
    if end is not None:
        last, _ = _local(end - timedelta(days=1), event.time_zone)
        if last.date() > start.date():
            return f"from {_day(start)} to {_day(last)}"
    return f"on {_day(start)}"


def _clean_who(text: str) -> str | None:
    who = _WHO_CUT.split(text, maxsplit=1)[0]
    who = _EDGE.sub("", who)
    words = who.split()
    if not words:
        return None
    who = " ".join(words[:MAX_WHO_WORDS])[:MAX_WHO_CHARS].strip()
    return who or None


def _article(word: str) -> str:
    if word.isupper() and len(word) <= 5:  # acronyms are read letter by letter: "an MRI"
        return "an" if word[0] in "AEFHILMNORSX" else "a"
    return "an" if word[:1].lower() in "aeiou" else "a"


_WITH_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bmeeting\s+with\s+(?P<who>.+)", re.I), "a meeting with"),
    (re.compile(r"\bcall\s+with\s+(?P<who>.+)", re.I), "a call with"),
    (re.compile(r"\bappointment\s+with\s+(?P<who>.+)", re.I), "an appointment with"),
    (
        re.compile(r"\b(?P<meal>lunch|dinner|breakfast|coffee|drinks)\s+with\s+(?P<who>.+)", re.I),
        "{meal} with",
    ),
)
_OF_APPOINTMENT = re.compile(r"^(?P<what>.+?)\s+appointment\b", re.I)

_FREQ = {"DAILY": "daily", "WEEKLY": "weekly", "MONTHLY": "monthly", "YEARLY": "yearly"}
_FREQ_STEP = {
    "DAILY": timedelta(days=1),
    "WEEKLY": timedelta(days=7),
    "MONTHLY": timedelta(days=31),
    "YEARLY": timedelta(days=366),
}


def title_phrase(title: str | None) -> str | None:
    """What a title says the owner has: "a meeting with Dr. Smith", "a dentist
    appointment", "lunch with Sam"; None when no pattern matches."""
    if not title:
        return None
    for pattern, template in _WITH_PATTERNS:
        match = pattern.search(title)
        if match is None:
            continue
        who = _clean_who(match.group("who"))
        if who is None:
            continue
        if "{meal}" in template:
            return f"{match.group('meal').lower()} with {who}"
        return f"{template} {who}"
    match = _OF_APPOINTMENT.search(title)
    if match is None:
        return None
    what = _clean_who(match.group("what"))
    if what is None:
        return None
    words = what.split()
    if len(words) == 1 and not what.isupper():
        what = what[0].lower() + what[1:]  # "Dentist appointment" → "a dentist appointment"
    return f"{_article(what)} {what} appointment"


def _rrule(event: CalendarEvent) -> dict[str, str] | None:
    for line in event.recurrence:
        if line.upper().startswith("RRULE:"):
            parts = (p.split("=", 1) for p in line[6:].split(";") if "=" in p)
            return {k.upper(): v for k, v in parts}
    return None


def _rrule_until(value: str) -> datetime | None:
    value = value.strip()
    for fmt in ("%Y%m%dT%H%M%SZ", "%Y%m%dT%H%M%S", "%Y%m%d"):
        try:
            return datetime.strptime(value, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def series_end(event: CalendarEvent) -> tuple[bool, datetime | None]:
    """For a recurring series: (is it recurring, when its last occurrence ends or None
    when it never ends). COUNT is approximated generously (months as 31 days)."""
    rule = _rrule(event)
    if rule is None:
        return False, None
    duration = (
        (event.effective_end - event.start)
        if event.start is not None and event.effective_end is not None
        else DEFAULT_DURATION
    )
    if "UNTIL" in rule:
        until = _rrule_until(rule["UNTIL"])
        return True, (until + duration) if until else None
    if "COUNT" in rule and event.start is not None:
        try:
            count = max(1, int(rule["COUNT"]))
            interval = max(1, int(rule.get("INTERVAL", "1")))
        except ValueError:
            return True, None
        step = _FREQ_STEP.get(rule.get("FREQ", "").upper(), timedelta(days=1))
        return True, event.start + step * interval * (count - 1) + duration
    return True, None


def _context(event: CalendarEvent, owner_name: str, now: datetime) -> DerivedMemory | None:
    phrase = title_phrase(event.title)
    if phrase is None or event.start is None:
        return None
    recurring, last_end = series_end(event)
    if recurring:
        if last_end is not None and last_end <= now:
            return None
        rule = _rrule(event) or {}
        freq = _FREQ.get(rule.get("FREQ", "").upper())
        interval = rule.get("INTERVAL", "1")
        if freq and interval not in ("", "1"):
            freq = None  # "every 2 weeks" reads badly as an adjective; say "recurring"
        article_free = re.sub(r"^(a|an)\s+", "", phrase)
        head = f"{owner_name} has a {freq or 'recurring'} {article_free}"
        content = f"{head}, first {describe_when(event)}"
        if last_end is not None:
            content += f", until {_day(_local(last_end, event.time_zone)[0])}"
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
        content=f"{owner_name} has {phrase} {describe_when(event)}".strip(),
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
) -> list[DerivedMemory]:
    """The memories an event gives its owner (see the module docstring).

    ``excluded_emails`` are addresses that must never become contacts: the owner's own
    and those of the people in the owner's circles. ``excluded_names`` likewise (circle
    members' names and usernames, for people invited under an address Alfred does not
    know; a first name or an address made of one is enough, see :func:`_may_be_one_of`).
    A cancelled event gives nothing.
    """
    if event.cancelled:
        return []
    memories = _contacts(event, owner_name, excluded_emails, excluded_names, now)
    context = _context(event, owner_name, now)
    if context is not None:
        memories.append(context)
    return memories
