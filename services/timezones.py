"""The time zone use case: whose clock a person's times are told on, and setting it.

:meth:`TimeZones.zone_for` is what every feature that states a time calls (the reply's
"now", calendar listings, reminders): the person's own zone, else their connected
calendar's, else the circle's, else UTC (:func:`memory.timezones.resolve_zone`). When the
answer is a guess (the circle's or UTC), the feature that states a time with it adds
:meth:`TimeZones.fallback_note` — said once per person, ever.

A time zone is a setting, not a memory: it is never stored as a fact, and what someone
says about their own zone in their DM is used for their own times only (never told to
anyone else).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memory.calendar_ports import CalendarStore
from memory.models import Thread, ThreadKind, Viewer
from memory.ports import Clock
from memory.rules.intents.time_zone import TimeZoneIntent
from memory.stores import DirectoryStore
from memory.timezones import (
    ResolvedZone,
    ZoneParse,
    ZoneStore,
    clock_phrase,
    common_zone,
    fallback_note,
    parse_zone,
    resolve_zone,
)

#: A reply that states a clock time ("14:05", "9am", "at 6 pm") without naming its zone
#: ("15:00 Europe/Paris", as calendar memories say, is clear whatever the reader's zone).
_STATES_TIME = re.compile(
    r"\b(?:(?:[01]?\d|2[0-3]):[0-5]\d|(?:1[0-2]|0?[1-9])\s?[ap]\.?m\b)"
    r"(?!\s*(?:[A-Z][A-Za-z_-]+/[A-Za-z_/+-]+|UTC|GMT)\b)",
    re.I,
)
HOW_TO_SET = 'Tell me "my time zone is …" (for example Europe/Lisbon) to change it.'


def states_time(text: str) -> bool:
    """Whether a reply states a clock time (so the zone it is in matters)."""
    return _STATES_TIME.search(text) is not None


@dataclass
class TimeZones:
    """Reads and sets time zones; the one place the resolution order is applied."""

    store: ZoneStore
    clock: Clock
    #: The calendar connections (their ``time_zone``), None when there are none.
    calendars: CalendarStore | None = None
    #: Whose circles a person is in, for the zone of their DM (None: their own only).
    directory: DirectoryStore | None = None

    async def zone_of(
        self,
        user_id: str,
        *,
        group_circle_id: str | None = None,
        circle_ids: Sequence[str] = (),
    ) -> ResolvedZone:
        """``user_id``'s zone. In a group (``group_circle_id``) the circle fallback is
        that group's zone; elsewhere the zone their circles (``circle_ids``) agree on."""
        own = await self.store.user_zone(user_id)
        calendar = None
        if self.calendars is not None and own is None:
            connection = await self.calendars.get(user_id)
            if connection is not None and connection.connected:
                calendar = connection.time_zone
        circle = None
        if own is None and calendar is None:
            wanted = [group_circle_id] if group_circle_id else sorted(circle_ids)
            zones = await self.store.circle_zones(wanted)
            circle = (
                zones.get(group_circle_id) if group_circle_id else common_zone(list(zones.values()))
            )
        return resolve_zone(own, calendar, circle)

    async def zone_for(self, viewer: Viewer) -> ResolvedZone:
        """The zone of the person speaking in ``viewer``'s thread (see the module doc)."""
        thread = viewer.thread
        group = thread.circle_id if thread.kind is ThreadKind.GROUP else None
        return await self.zone_of(
            viewer.user_id, group_circle_id=group, circle_ids=sorted(viewer.circle_ids)
        )

    async def zone_in(self, thread: Thread, user_id: str) -> ResolvedZone:
        """``user_id``'s zone where they speak in ``thread``: what :meth:`zone_for` gives
        their viewer there, for callers (formation, explicit requests) that hold the
        thread but not the viewer."""
        if thread.kind is ThreadKind.GROUP:
            return await self.zone_of(user_id, group_circle_id=thread.circle_id)
        circles = await self.directory.circles_of(user_id) if self.directory else []
        return await self.zone_of(user_id, circle_ids=sorted(c.id for c in circles))

    async def fallback_note(self, viewer: Viewer, zone: ResolvedZone) -> str | None:
        """The "(times in UTC — …)" note when ``zone`` is a guess and this person has not
        been told yet (then recorded as told); None otherwise."""
        if not zone.fallback:
            return None
        if not await self.store.take_fallback_notice(viewer.user_id):
            return None
        return fallback_note(zone, in_group=viewer.thread.kind is ThreadKind.GROUP)

    # --- the intent ------------------------------------------------------------------

    async def answer(self, viewer: Viewer, intent: TimeZoneIntent) -> str:
        """The reply to "my time zone is …", "our time zone is …" or "what's my time
        zone?". An invalid zone changes nothing and says so."""
        in_group = viewer.thread.kind is ThreadKind.GROUP and viewer.thread.circle_id
        if intent.scope == "us" and not in_group:
            return (
                'A group\'s time zone is set in the group: say "our time zone is …" there. '
                'For yourself, say "my time zone is …".'
            )
        if intent.action == "ask":
            return await self._describe(viewer, intent.scope)
        parsed = parse_zone(intent.value or "")
        if parsed.name is None:
            return _refusal(parsed)
        hhmm = f"{ResolvedZone(parsed.name, 'own').local(self.clock.now()):%H:%M}"
        if intent.scope == "us" and viewer.thread.circle_id:
            await self.store.set_circle_zone(viewer.thread.circle_id, parsed.name)
            return (
                f"OK — I'll use {parsed.name} for this group's times, and for anyone here "
                f"who hasn't set their own (now {hhmm} there)."
            )
        await self.store.set_user_zone(viewer.user_id, parsed.name)
        return f"OK — I'll use {parsed.name} for your times (now {hhmm} there)."

    async def _describe(self, viewer: Viewer, scope: str) -> str:
        if scope == "us":
            circle_id = viewer.thread.circle_id or ""
            set_here = (await self.store.circle_zones([circle_id])).get(circle_id)
            if set_here is None:
                return 'This group has no time zone set. Say "our time zone is …" to set one.'
            there = clock_phrase(ResolvedZone(set_here, "circle").local(self.clock.now()))
            return f"This group's time zone is {set_here} (it's {there} there)."
        zone = await self.zone_for(viewer)
        local = clock_phrase(zone.local(self.clock.now()))
        if zone.source == "own":
            return f"Your time zone is {zone.name} (it's {local} there)."
        if zone.source == "calendar":
            return (
                f"I use {zone.name}, your Google Calendar's time zone (it's {local} there). "
                f"{HOW_TO_SET}"
            )
        # They now know which zone was guessed: the one-time note is not needed any more.
        await self.store.take_fallback_notice(viewer.user_id)
        if zone.source == "circle":
            whose = "this group's" if viewer.thread.kind is ThreadKind.GROUP else "your group's"
            return (
                f"You haven't told me yours, so I use {zone.name}, {whose} time zone "
                f"(it's {local} there). {HOW_TO_SET}"
            )
        return f"You haven't told me yours, so I use UTC (it's {local}). {HOW_TO_SET}"


def _refusal(parsed: ZoneParse) -> str:
    said = parsed.said or "that"
    if parsed.problem == "ambiguous" and parsed.suggestion:
        return (
            f'"{said}" isn\'t a time zone I can use reliably (abbreviations are ambiguous or '
            f"ignore summer time), so nothing changed. Did you mean {parsed.suggestion}? "
            f'Say "my time zone is {parsed.suggestion}".'
        )
    return (
        f'I don\'t know the time zone "{said}", so nothing changed. Use a name like '
        "Europe/Lisbon or America/New_York (a region and a city, as in the IANA list), "
        "or a city such as London."
    )
