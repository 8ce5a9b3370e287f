"""Calendar events, normalised from the two shapes they arrive in.

Google Calendar v3 resources (``summary``, ``start.dateTime`` or ``start.date``,
``attendees[].displayName``) come from the sync and the agent tools; the flat replay shape
(``title``, ``start`` as a string, ``attendees[].name``, REPLAY.md) from replays.
:func:`parse_event` accepts both, so everything downstream deals with one
:class:`CalendarEvent`; it never raises on odd data (no title, all-day, recurring, no
attendee names, unknown time zones): a field it cannot read is left empty.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict

#: A timed event without an end lasts this long (Google requires an end; replays may not).
DEFAULT_DURATION = timedelta(hours=1)


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
    #: Google's kind of event: ``default``, ``outOfOffice``, ``focusTime``,
    #: ``workingLocation``, ``birthday``, ``fromGmail`` (None in the replay shape).
    event_type: str | None = None

    @property
    def effective_end(self) -> datetime | None:
        """When the event is over: its end, or its start plus a default duration."""
        if self.end is not None:
            return self.end
        if self.start is None:
            return None
        return self.start + (timedelta(days=1) if self.all_day else DEFAULT_DURATION)


def zone_named(name: str | None) -> tzinfo | None:
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
    zone = zone_named(zone_name) or UTC
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
    if zone_named(zone_name) is None:
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
        event_type=_text(raw.get("eventType")),
    )
