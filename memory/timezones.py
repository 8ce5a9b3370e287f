"""Whose clock a time is told on: the person's time zone, and where it comes from.

Alfred states times (calendar listings, calendar memories, the reply's "now", reminders)
in one zone per person, chosen in this order (issue 14 §7):

1. the zone the person set ("my time zone is Europe/Lisbon");
2. else the time zone of their connected Google Calendar (stored by the sync);
3. else the circle's ("our time zone is America/New_York", said in the group): in a group,
   that group's; in a DM, the zone their circles agree on (none when they disagree);
4. else UTC.

A zone from 3 or 4 is a guess, so the first time Alfred states a time on a guess for a
person it says which zone it used (:func:`fallback_note`), once per person.

Only real IANA names are accepted (validated with :mod:`zoneinfo`), plus the forms that
name exactly one of them: a city ("London time" → Europe/London), whole-hour offsets
("UTC+2"). Abbreviations such as "EST" or "PST" are refused with a suggestion: they
either are not zones at all or name a fixed offset that ignores summer time, and a
reminder an hour off is worse than a question.

Pure functions and the storage port; the use case that reads the stores is
``services.timezones.TimeZones``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from functools import cache
from typing import Literal, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from memory.models import Thread

#: Where a person's zone came from; "circle" and "default" are fallbacks (guesses).
ZoneSource = Literal["own", "calendar", "circle", "default"]
DEFAULT_ZONE = "UTC"
#: Regions whose zones are named after a city ("Europe/London"): cities are read there.
_CITY_REGIONS = frozenset(
    {"Africa", "America", "Antarctica", "Asia", "Atlantic", "Australia", "Europe", "Indian",
     "Pacific"}
)  # fmt: skip
#: Abbreviations people say that are not a usable zone: what they most likely mean.
_ABBREVIATIONS: dict[str, str] = {
    "est": "America/New_York",
    "edt": "America/New_York",
    "cst": "America/Chicago",
    "cdt": "America/Chicago",
    "mst": "America/Denver",
    "mdt": "America/Denver",
    "pst": "America/Los_Angeles",
    "pdt": "America/Los_Angeles",
    "bst": "Europe/London",
    "cest": "Europe/Paris",
    "eest": "Europe/Athens",
    "west": "Europe/Lisbon",
    "ist": "Asia/Kolkata",
    "jst": "Asia/Tokyo",
    "aest": "Australia/Sydney",
    "aedt": "Australia/Sydney",
}
_OFFSET = re.compile(r"^(?:utc|gmt)\s*(?P<sign>[+-])\s*(?P<hours>\d{1,2})(?::?00)?$", re.I)
_TRIM = re.compile(r"^[\s\"'`“”‘’(]+|[\s\"'`“”‘’).!,;]+$")


@dataclass(frozen=True)
class ZoneParse:
    """What a stated zone reads as: an IANA ``name``, or a ``problem`` (and maybe a
    ``suggestion``) to answer with, changing nothing."""

    said: str
    name: str | None = None
    problem: Literal["unknown", "ambiguous"] | None = None
    suggestion: str | None = None


@dataclass(frozen=True)
class ResolvedZone:
    """The zone a person's times are told in, and where it came from."""

    name: str
    source: ZoneSource

    @property
    def fallback(self) -> bool:
        """Whether the zone is a guess (the circle's or UTC), not the person's own."""
        return self.source in ("circle", "default")

    @property
    def tz(self) -> tzinfo:
        return ZoneInfo(self.name)

    def local(self, moment: datetime) -> datetime:
        """``moment`` (aware) on this zone's clock."""
        return moment.astimezone(self.tz)


class SpeakerZones(Protocol):
    """The clock a person's words are dated on in a thread (``services.timezones.TimeZones``).

    "Tomorrow" said at 01:00 in Auckland is a day later than the same word at 01:00 UTC:
    formation and explicit requests read a line's days on the clock the reply to that
    line was given on, so what Alfred stores and what it said agree."""

    async def zone_in(self, thread: Thread, user_id: str) -> ResolvedZone: ...


class ZoneStore(Protocol):
    """Time zones as stored on the users and circles documents (MongoDB adapter:
    ``integrations.mongo.time_zones``). A person's zone is erased with their user record."""

    async def user_zone(self, user_id: str) -> str | None: ...

    async def set_user_zone(self, user_id: str, zone: str | None) -> None: ...

    async def circle_zones(self, circle_ids: list[str]) -> dict[str, str]:
        """The zones set for these circles (circles without one are left out)."""
        ...

    async def set_circle_zone(self, circle_id: str, zone: str | None) -> None: ...

    async def take_fallback_notice(self, user_id: str) -> bool:
        """True exactly once per person: the first caller may say which zone was used
        (atomic, so two replies at once do not both say it)."""
        ...


@cache
def _known() -> dict[str, str]:
    """Every IANA name, by its case-folded spelling."""
    return {name.casefold(): name for name in available_timezones()}


@cache
def _cities() -> dict[str, str]:
    """City → zone, for cities that name exactly one zone ("new york" → America/New_York)."""
    found: dict[str, set[str]] = {}
    for name in available_timezones():
        parts = name.split("/")
        if len(parts) < 2 or parts[0] not in _CITY_REGIONS:
            continue
        city = parts[-1].replace("_", " ").casefold()
        found.setdefault(city, set()).add(name)
    out: dict[str, str] = {}
    for city, zones in found.items():
        if len(zones) == 1 or _same_clock(zones):
            # Old aliases ("America/Buenos_Aires") sit beside the canonical, deeper name.
            out[city] = max(zones, key=lambda z: (z.count("/"), z))
    return out


_SAMPLES = tuple(datetime(y, m, 1, 12, tzinfo=UTC) for y in (2005, 2015, 2025) for m in (1, 7))


def _same_clock(zones: set[str]) -> bool:
    """Whether several names tell the same time (aliases of one zone, recently)."""
    offsets = {tuple(ZoneInfo(z).utcoffset(s) for s in _SAMPLES) for z in zones}
    return len(offsets) == 1


def valid_zone(name: str | None) -> bool:
    """Whether ``name`` is an IANA zone this machine knows (exact spelling)."""
    if not name or name not in _known().values():
        return False
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def parse_zone(said: str) -> ZoneParse:
    """Read a zone as people state it: "Europe/Lisbon", "europe/lisbon", "CET", "UTC",
    "London" (a city naming one zone), "UTC+2" (whole hours). Anything else is unknown;
    "EST", "PST" and friends are ambiguous, with a suggested IANA name."""
    text = " ".join(_TRIM.sub("", said).split())
    text = re.sub(r"\s+(?:time(?:\s*zone)?|timezone|tz)$", "", text, flags=re.I)
    key = text.casefold()
    if not key:
        return ZoneParse(said=said.strip(), problem="unknown")
    if key in _ABBREVIATIONS:
        return ZoneParse(text, problem="ambiguous", suggestion=_ABBREVIATIONS[key])
    name = _known().get(key.replace(" ", "_"))
    if name is not None:
        return _named(text, name)
    offset = _OFFSET.match(text)
    if offset is not None:
        hours = int(offset.group("hours"))
        if hours == 0:
            return ZoneParse(text, name="UTC")
        # POSIX signs are inverted in the Etc area: UTC+2 is Etc/GMT-2.
        name = f"Etc/GMT{'-' if offset.group('sign') == '+' else '+'}{hours}"
        return _named(text, name)
    city = _cities().get(key)
    if city is not None:
        return ZoneParse(text, name=city)
    return ZoneParse(text, problem="unknown")


def _named(text: str, name: str) -> ZoneParse:
    if valid_zone(name):
        return ZoneParse(text, name=name)
    return ZoneParse(text, problem="unknown")


def common_zone(zones: list[str]) -> str | None:
    """The circles' zone for someone outside a group: the one all their circles that set
    a zone agree on, else None (a guess between two would be wrong for one of them)."""
    distinct = {z for z in zones if valid_zone(z)}
    return distinct.pop() if len(distinct) == 1 else None


def resolve_zone(
    own: str | None, calendar: str | None = None, circle: str | None = None
) -> ResolvedZone:
    """The zone a person's times are told in: their own, their calendar's, their
    circle's, else UTC (a stored name that is no longer valid is skipped)."""
    if valid_zone(own) and own is not None:
        return ResolvedZone(own, "own")
    if valid_zone(calendar) and calendar is not None:
        return ResolvedZone(calendar, "calendar")
    if valid_zone(circle) and circle is not None:
        return ResolvedZone(circle, "circle")
    return ResolvedZone(DEFAULT_ZONE, "default")


def clock_phrase(moment: datetime) -> str:
    """A local moment in words: "14:05 on Wednesday 7 January 2026"."""
    return f"{moment:%H:%M} on {moment:%A} {moment.day} {moment:%B %Y}"


def fallback_note(zone: ResolvedZone, *, in_group: bool) -> str:
    """What Alfred adds the first time it states a time for someone on a guessed zone."""
    if zone.source == "circle":
        whose = "this group's" if in_group else "your group's"
        used = f"{zone.name}, {whose} time zone"
    else:
        used = zone.name
    return f'(times in {used} — tell me "my time zone is …" to change it)'
